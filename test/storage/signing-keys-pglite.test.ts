import { signingKeysContract } from './signing-keys-contract.ts';

signingKeysContract('pglite');
