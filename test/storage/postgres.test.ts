import { TEST_DATABASE_URL } from '../helpers/storage.ts';
import { storageContract } from './contract.ts';

// Runs when DATABASE_URL names a PostgreSQL server (CI starts one).
if (TEST_DATABASE_URL) storageContract('postgres');
