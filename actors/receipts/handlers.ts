import type { Handler } from '../kernel/handler.ts';

/** The JWKS of every signing key, retired ones included (actors/receipts/signing-keys.ts). */
export const getServiceKeys: Handler<'get_service_keys'> = async ({ services }) =>
  services.files.signingKeys.jwks(services.db());
