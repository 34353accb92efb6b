/** How long an invite lives when its maker does not say (7 days), and at most (30 days). */
export const DEFAULT_INVITE_HOURS = 168;
export const MAX_INVITE_HOURS = 720;
