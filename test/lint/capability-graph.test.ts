import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CAPABILITIES } from '../../actors/capabilities.ts';

/**
 * The capabilities build on one another without a cycle: a capability's modules in every layer
 * (actors/<name>/, storage/<name>[.ts|/], protocol/<name>[.ts|/]) import those of the capabilities
 * below it, never of one that imports them back. Read from the source: every import, type-only,
 * re-exported or dynamic, of every module of the three layers, for every capability of the list.
 *
 * The cycles that remain from before this test are written down below, each edge with the
 * imports that make it; an edge that closes a new cycle fails, and so does a written edge that
 * no longer closes one (the list only shrinks).
 */
const root = join(import.meta.dirname, '../..');
const LAYERS = ['actors', 'storage', 'protocol'];
const NAMES = CAPABILITIES.map((capability) => capability.name);

/** The capability a module belongs to by its path, or null (the kernel, the drivers, shared code). */
function capabilityOf(path: string): string | null {
  const [layer, first] = path.split('/');
  if (!layer || !LAYERS.includes(layer) || !first) return null;
  const name = first.replace(/\.ts$/, '');
  return NAMES.includes(name) ? name : null;
}

function modules(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(join(root, path)).isDirectory()) return modules(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** Every edge between two capabilities: "from -> to" and the imports (`module -> module`) making it. */
function capabilityEdges(): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const path of LAYERS.flatMap(modules)) {
    const from = capabilityOf(path);
    if (!from) continue;
    const { importedFiles } = ts.preProcessFile(readFileSync(join(root, path), 'utf8'), true, true);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = relative(root, resolve(join(root, dirname(path)), fileName));
      const to = capabilityOf(target);
      if (!to || to === from) continue;
      const key = `${from} -> ${to}`;
      edges.set(key, [...(edges.get(key) ?? []), `${path} -> ${target}`]);
    }
  }
  return edges;
}

/** The edges that lie on a cycle: both ends in one strongly connected component (Tarjan). */
function edgesOnCycles(edges: Map<string, string[]>): string[] {
  const next = new Map<string, string[]>();
  for (const key of edges.keys()) {
    const [from, to] = key.split(' -> ') as [string, string];
    next.set(from, [...(next.get(from) ?? []), to]);
  }
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const component = new Map<string, number>();
  let counter = 0;
  const visit = (node: string) => {
    order.set(node, counter);
    low.set(node, counter++);
    stack.push(node);
    for (const to of next.get(node) ?? []) {
      if (!order.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (!component.has(to)) low.set(node, Math.min(low.get(node)!, order.get(to)!));
    }
    if (low.get(node) === order.get(node)) {
      let member: string;
      do {
        member = stack.pop()!;
        component.set(member, order.get(node)!);
      } while (member !== node);
    }
  };
  for (const name of NAMES) if (!order.has(name)) visit(name);
  return [...edges.keys()]
    .filter((key) => {
      const [from, to] = key.split(' -> ') as [string, string];
      return component.get(from) === component.get(to);
    })
    .sort();
}

/**
 * The edges still on a cycle, to be cut: none (32 when this test was written, issue 34). Each
 * written here stays only while it still closes a cycle; the test below names the imports of each.
 */
const CYCLE_EDGES_TO_CUT: string[] = [];

const test = suite('the capabilities build on one another without a cycle');

test('the scan finds imports of every kind between capabilities', () => {
  const edges = capabilityEdges();
  // One of each kind, known to be there: a value import, a type-only import, a protocol import.
  assert.ok(edges.get('store -> index')?.some((edge) => edge.startsWith('actors/store/')));
  assert.ok(edges.get('payments -> deals')?.length);
  assert.ok([...edges.keys()].some((key) => key.startsWith('deals -> ')));
  assert.ok(edges.size > 20, `only ${edges.size} edges: the scan reads too little`);
});

test('no import between capabilities closes a cycle beyond those written down to be cut', () => {
  const edges = capabilityEdges();
  const onCycles = edgesOnCycles(edges);
  const added = onCycles.filter((edge) => !CYCLE_EDGES_TO_CUT.includes(edge));
  assert.equal(
    added.map((edge) => `${edge}: ${edges.get(edge)!.join('; ')}`),
    [],
    'these imports close a cycle between capabilities: invert them (a hook, a registration)',
  );
  const cut = CYCLE_EDGES_TO_CUT.filter((edge) => !onCycles.includes(edge));
  assert.equal(cut, [], 'these edges close no cycle any more: strike them from the list');
});

test.run();
