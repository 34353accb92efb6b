/** Things tests open that outlive one suite (template databases, servers); closed at the end. */
const closers: (() => Promise<void>)[] = [];

export function onTestsEnd(close: () => Promise<void>): void {
  closers.push(close);
}

export async function closeTestResources(): Promise<void> {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
}
