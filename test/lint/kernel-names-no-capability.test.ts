import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CAPABILITIES } from '../../actors/capabilities.ts';

/**
 * The kernel (actors/kernel/) and the doors (server/) name no capability, so that a new
 * capability touches neither: no module there imports a capability's module (actors/<name>/,
 * storage/<name>, protocol/<name>), nor uses a member a capability declares on Services,
 * ServiceConfig or CapabilityConfig (declaration merging: `services.files`, `config.chainId`).
 * What a capability's own door must name is written down below, each with its reason; anything
 * else fails. Read from the source with TypeScript's parser, every import and property access.
 */
const root = join(import.meta.dirname, '../..');
const NAMES = CAPABILITIES.map((capability) => capability.name);

/**
 * Modules that may name capabilities, by path prefix: the capabilities they may name and why.
 * Keep it short; prefer a registration, a hook or a setting the capability declares.
 */
const EXCEPTIONS: { prefix: string; names: string[]; reason: string }[] = [
  {
    prefix: 'server/email/',
    names: ['email', 'workspaces', 'agents', 'moderation'],
    reason:
      "the SMTP door is the email capability's transport: its settings, accounts and outbox, the " +
      'replies to email invites (workspaces), and the sender as every door checks a caller ' +
      '(its agent, its suspension)',
  },
  {
    prefix: 'server/storage-link/',
    names: ['files', 'workspaces', 'agents', 'moderation'],
    reason:
      "the storage-link door speaks Azure Blob Storage's protocol for the files capability: its " +
      'versions and blocks, the workspace they are in, and the caller as every door checks one',
  },
  {
    prefix: 'server/socket/',
    names: ['feed', 'agents'],
    reason:
      "the socket.io door is the feed's transport: its cursor and its reads; and the caller as " +
      "every door checks one (its agent's signature policy)",
  },
  {
    prefix: 'server/invoke.ts',
    names: ['agents'],
    reason: "the one runner loads the caller's agent: every operation runs as an agent",
  },
  {
    prefix: 'actors/kernel/principal.ts',
    names: ['agents'],
    reason: 'who calls is an agent: the principal reads its agent row',
  },
  {
    prefix: 'server/http/router.ts',
    names: ['files'],
    reason: "a route's `{path*}` parameter is decoded as a file path",
  },
];

function modules(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(join(root, path)).isDirectory()) return modules(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

function capabilityOf(path: string): string | null {
  const [layer, first] = path.split('/');
  if (!layer || !['actors', 'storage', 'protocol'].includes(layer) || !first) return null;
  const name = first.replace(/\.ts$/, '');
  return NAMES.includes(name) ? name : null;
}

function parse(path: string): ts.SourceFile {
  return ts.createSourceFile(
    path,
    readFileSync(join(root, path), 'utf8'),
    ts.ScriptTarget.Latest,
    true,
  );
}

/** Each member a capability declares on the kernel's interfaces, with the capability. */
function declaredMembers(): Map<string, string> {
  const members = new Map<string, string>();
  for (const path of modules('actors')) {
    const owner = capabilityOf(path);
    if (!owner) continue;
    parse(path).forEachChild((node) => {
      if (!ts.isModuleDeclaration(node) || !node.body || !ts.isModuleBlock(node.body)) return;
      for (const declaration of node.body.statements) {
        if (!ts.isInterfaceDeclaration(declaration)) continue;
        for (const member of declaration.members)
          if (member.name && ts.isIdentifier(member.name)) members.set(member.name.text, owner);
      }
    });
  }
  return members;
}

/** What each module of the kernel and the doors names of capabilities: `capability: how`. */
function namings(): Map<string, string[]> {
  const members = declaredMembers();
  const found = new Map<string, string[]>();
  for (const path of [...modules('server'), ...modules('actors/kernel')]) {
    const named: string[] = [];
    const source = parse(path);
    for (const { fileName } of ts.preProcessFile(source.text, true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = relative(root, resolve(join(root, dirname(path)), fileName));
      const owner = capabilityOf(target);
      if (owner) named.push(`${owner}: imports ${target}`);
    }
    const visit = (node: ts.Node) => {
      if (ts.isPropertyAccessExpression(node) && members.has(node.name.text))
        named.push(`${members.get(node.name.text)}: uses ${node.getText(source)}`);
      // `const { helpWorkspaceId } = services` names the member as surely as a dot does.
      const taken = ts.isBindingElement(node) ? (node.propertyName ?? node.name) : undefined;
      if (taken && ts.isIdentifier(taken) && members.has(taken.text))
        named.push(
          `${members.get(taken.text)}: takes ${taken.text} from ${node.parent.parent.getText(source)}`,
        );
      node.forEachChild(visit);
    };
    visit(source);
    if (named.length) found.set(path, named);
  }
  return found;
}

const test = suite('the kernel and the doors name no capability');

test('the probe finds both kinds of naming: an import and a declared member', () => {
  const found = namings();
  assert.ok(found.get('server/socket/door.ts')?.some((how) => how.startsWith('feed: imports')));
  assert.ok(found.get('server/invoke.ts')?.some((how) => how === 'agents: uses services.agents'));
  assert.ok(declaredMembers().get('chainPollMs') === 'payments');
});

test('no module of server/ or actors/kernel/ names a capability but as written down, with why', () => {
  const unexplained: string[] = [];
  for (const [path, named] of namings()) {
    const allowed = EXCEPTIONS.filter(({ prefix }) => path.startsWith(prefix)).flatMap(
      ({ names }) => names,
    );
    for (const how of named)
      if (!allowed.includes(how.split(':')[0] as string)) unexplained.push(`${path}: ${how}`);
  }
  assert.equal(unexplained, []);
});

test('every exception written down is still needed', () => {
  const found = namings();
  const unneeded = EXCEPTIONS.flatMap(({ prefix, names }) =>
    names
      .filter(
        (name) =>
          ![...found].some(
            ([path, named]) =>
              path.startsWith(prefix) && named.some((how) => how.startsWith(`${name}:`)),
          ),
      )
      .map((name) => `${prefix}: ${name}`),
  );
  assert.equal(unneeded, []);
});

test.run();
