import { storageContract } from './contract.ts';

storageContract('pglite');
