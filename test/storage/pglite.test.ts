import { storageContract } from './contract.ts';
import { transactionContract } from './transactions-contract.ts';

storageContract('pglite');
transactionContract('pglite');
