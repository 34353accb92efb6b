/**
 * uvu decides when it loads whether to run each suite at once or queue it for `exec`: this sets
 * the queue up first. Import it before anything that imports uvu (./worker.ts does, first).
 */
const globals = globalThis as unknown as { UVU_DEFER: number; UVU_QUEUE: unknown[][] };
globals.UVU_DEFER = 1;
globals.UVU_QUEUE = [];
