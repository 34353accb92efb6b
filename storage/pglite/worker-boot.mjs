// Worker threads do not inherit the TypeScript loader of the main thread on Node 20: register
// it here, then load the worker itself.
import { tsImport } from 'tsx/esm/api';

await tsImport('./worker.ts', import.meta.url);
