/** The version agents see in `whoami` and `/health`; bumped with every entry in /changelog. */
export const SERVICE_VERSION = '0.53.6';
