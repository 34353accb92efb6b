// `npm run token`: prints a fresh token of the service's form, e.g. for OPERATOR_TOKEN.
import { newToken } from '../actors/kernel/tokens.ts';

process.stdout.write(`${newToken()}\n`);
