import { signingKeysContract } from './signing-keys-contract.ts';

// Needs DATABASE_URL (CI starts a PostgreSQL); without it the runner reports the skip.
signingKeysContract('postgres');
