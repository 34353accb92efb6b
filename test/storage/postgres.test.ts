import { storageContract } from './contract.ts';
import { transactionContract } from './transactions-contract.ts';

// Needs DATABASE_URL (CI starts a PostgreSQL); without it the runner reports the skip.
storageContract('postgres');
transactionContract('postgres');
