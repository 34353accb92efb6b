import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import * as assert from 'uvu/assert';
import { serverSuite } from '../helpers/server-suite.ts';

/**
 * Capabilities meet through Services: each declares the members it adds
 * (`declare module '../kernel/services.ts'`), filled by its actor kinds, by its own start-up
 * step, or, for a port, by the start-up step of a capability that builds on it (deals declare
 * `dealPayments`, payments provide it). A member declared and never filled type-checks and
 * breaks only when a request reaches it: this enumerates every declaration from the source and
 * finds each on a started service.
 */
const test = serverSuite(
  'every member a capability declares on the services is there once started',
);

const root = join(import.meta.dirname, '../..');

function modules(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(join(root, path)).isDirectory()) return modules(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const isReadonly = (member: ts.PropertySignature) =>
  member.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.ReadonlyKeyword) ?? false;

/** Each readonly member declared on Services by a capability's module, with its module. */
function declaredMembers(): Map<string, string> {
  const members = new Map<string, string>();
  for (const path of modules('actors').filter((p) => !p.startsWith('actors/kernel/'))) {
    const source = ts.createSourceFile(
      path,
      readFileSync(join(root, path), 'utf8'),
      ts.ScriptTarget.Latest,
      true,
    );
    for (const statement of source.statements) {
      if (!ts.isModuleDeclaration(statement) || !statement.name.text.endsWith('kernel/services.ts'))
        continue;
      const body = statement.body;
      if (!body || !ts.isModuleBlock(body)) continue;
      for (const declaration of body.statements) {
        if (!ts.isInterfaceDeclaration(declaration) || declaration.name.text !== 'Services')
          continue;
        for (const member of declaration.members) {
          // A readonly member is filled once (a registry, `services.provide`); a writable one is
          // a flag its capability sets when it applies (indexReaderLogin, on PostgreSQL only).
          const readonly = ts.isPropertySignature(member) && isReadonly(member);
          if (readonly && member.name && ts.isIdentifier(member.name)) {
            members.set(member.name.text, path);
          }
        }
      }
    }
  }
  return members;
}

test('the scan finds the members capabilities declare, a registry, a start-up service and a port', () => {
  const declared = declaredMembers();
  assert.is(declared.get('deals'), 'actors/deals/capability.ts');
  assert.is(declared.get('chain'), 'actors/payments/capability.ts');
  assert.is(declared.get('dealPayments'), 'actors/deals/deal-payments.ts');
  assert.ok(declared.size > 10, `only ${declared.size} members: the scan reads too little`);
});

test('each readonly member a capability declares on the services is filled once the service has started', ({
  server,
}) => {
  const services = server.services as unknown as Record<string, unknown>;
  const missing = [...declaredMembers()]
    .filter(([name]) => !Object.hasOwn(services, name) || services[name] === undefined)
    .map(([name, path]) => `${name} (declared in ${path})`);
  assert.equal(missing, [], 'declared on Services, provided by no capability');
});

test.run();
