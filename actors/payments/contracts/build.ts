/**
 * Rebuilds artifacts.json (abi + creation bytecode of TestUsdc, Forwarder, ForwarderFactory) from
 * the .sol sources beside it with the `solc` npm package: `npx tsx actors/payments/contracts/build.ts`.
 *
 * The output must not drift: a deposit address is a CREATE2 address over the Forwarder's creation
 * bytecode, so another compiler version or setting would move every deposit address away from
 * what a deployed factory computes. Hence the exact compiler version check, the fixed settings and
 * a byte-for-byte stable file (prettier-formatted, so `prettier --check` agrees with it).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as prettier from 'prettier';
import solc from 'solc';

const HERE = import.meta.dirname;
const COMPILER = '0.8.37';
const CONTRACTS = ['TestUsdc', 'Forwarder', 'ForwarderFactory'] as const;

interface SolcOutput {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string }[];
  contracts?: Record<
    string,
    Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>
  >;
}

if (!String(solc.version()).startsWith(`${COMPILER}+`)) {
  throw new Error(`solc ${COMPILER} is required (found ${solc.version()}): bytecode would change`);
}

const input = {
  language: 'Solidity',
  sources: Object.fromEntries(
    CONTRACTS.map((name) => [
      `${name}.sol`,
      { content: readFileSync(join(HERE, `${name}.sol`), 'utf8') },
    ]),
  ),
  settings: {
    // Paris (the Merge) and not later: no PUSH0 or transient storage, so the same bytecode, and
    // so the same deposit addresses, run on anvil, Base and any EVM chain since the Merge.
    evmVersion: 'paris',
    optimizer: { enabled: true, runs: 200 },
    // No metadata hash in the bytecode: editing a comment must not move the deposit addresses.
    metadata: { bytecodeHash: 'none' },
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
  },
};

const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
const problems = output.errors ?? [];
for (const problem of problems) console.error(problem.formattedMessage);
if (problems.some((problem) => problem.severity === 'error')) process.exit(1);

const artifacts = Object.fromEntries(
  CONTRACTS.map((name) => {
    const contract = output.contracts?.[`${name}.sol`]?.[name];
    if (!contract) throw new Error(`solc produced no ${name}`);
    return [name, { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` }];
  }),
);

const path = join(HERE, 'artifacts.json');
const options = (await prettier.resolveConfig(path)) ?? {};
writeFileSync(
  path,
  await prettier.format(JSON.stringify(artifacts), { ...options, filepath: path }),
);
console.log(`wrote ${path}`);
