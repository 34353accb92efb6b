import postgres from 'postgres';
import type { Socket } from 'socket.io-client';
import * as assert from 'uvu/assert';
import { changesUntil } from '../helpers/changes.ts';
import { connectSocket } from '../helpers/clients.ts';
import { callJson as call } from '../helpers/http.ts';
import { eventually, within } from '../helpers/turns.ts';
import { twoServerSuite } from '../helpers/two-servers.ts';
import type { Change } from '../helpers/wire-types.ts';
import { joinWorkspace, newWorkspace } from '../helpers/workspaces.ts';

/**
 * Word from another process travels by NOTIFY on one LISTEN connection per process; what is
 * told while that connection is down is lost. Once listening resumes, the process must treat
 * every socket as possibly behind and re-read its feed, or a change committed in the gap would
 * reach the socket only with the agent's next change.
 */
const test = twoServerSuite('a process whose listening connection was lost catches up');

test('a change committed on one process while the other could not listen reaches the other’s socket once it listens again', async ({
  a,
  b,
  databaseUrl,
}) => {
  // From another database: a session may not shut the door of its own.
  const adminUrl = new URL(databaseUrl);
  const name = decodeURIComponent(adminUrl.pathname.slice(1));
  adminUrl.pathname = '/postgres';
  const admin = postgres(adminUrl.toString(), {
    max: 1,
    onnotice: () => undefined,
  });
  let socket: Socket | null = null;
  try {
    const agent = await a.signUp();
    const guest = await a.signUp();
    const workspaceId = await newWorkspace(a, agent);
    socket = connectSocket(b, agent.api_token);
    const connected = socket;
    await within(
      new Promise<void>((resolve) => connected.once('connect', () => resolve())),
      15_000,
      'the socket connects',
    );
    // A's pool holds a connection already, so its next commit needs no new login.
    assert.is((await call(a, 'GET', '/whoami', agent.api_token)).status, 200);

    // No new connection may log in, so B's listener, once cut, cannot listen again yet.
    await admin.unsafe(`alter database "${name}" allow_connections false`);
    try {
      await admin`select pg_terminate_backend(pid) from pg_stat_activity
        where datname = ${name} and query ilike 'listen%'`;
      await eventually(
        'the listening connections are gone',
        async () => {
          const [row] = await admin<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
            where datname = ${name} and query ilike 'listen%'`;
          return row?.n === 0;
        },
        15_000,
      );
      await joinWorkspace(a, agent, guest, workspaceId);
    } finally {
      await admin.unsafe(`alter database "${name}" allow_connections true`);
    }

    const events = await within(
      changesUntil<Change>(connected, 'invite.joined'),
      15_000,
      'the change made in the gap reaches the socket on the other process',
    );
    assert.is(events.filter((event) => event.type === 'invite.joined').length, 1);
  } finally {
    socket?.disconnect();
    await admin.end({ timeout: 5 });
  }
});

test.run();
