import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import * as assert from 'uvu/assert';
import { send } from '../helpers/chat.ts';
import { PYTHON_SOCKETIO, clientSuite } from '../helpers/real-clients.ts';
import { onTestsEnd } from '../helpers/resources.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { joinWorkspace, newWorkspace } from '../helpers/workspaces.ts';

/**
 * The changes feed with python-socketio (Debian python3-socketio 5), as a Python agent uses it:
 * `auth={'token': ...}`, `change` events. Debian ships no websocket-client beside it, so the
 * client talks engine.io's long-polling transport (requests), then as it would over websocket.
 */
const test = clientSuite<{ server: TestServer; script: string }>(
  'python-socketio on the changes feed',
  PYTHON_SOCKETIO,
);

/**
 * Connects with the token, prints `connected`, then prints the first `message.sent` change as
 * JSON and exits 0. A refused connection prints `{"refused": <connect_error data>}` and exits 2.
 */
const SCRIPT = String.raw`
import json, os, sys, threading
import socketio

url, token = sys.argv[1], sys.argv[2]
sio = socketio.Client(reconnection=False)
heard = threading.Event()
event = {}

# python-socketio 5.7.2's connect() hears the refusal but waits out wait_timeout all the same
# before raising (20 s a run): the refusal is answered as it comes instead.
@sio.on('connect_error')
def on_connect_error(data):
    print(json.dumps({'refused': data}), flush=True)
    os._exit(2)

@sio.on('change')
def on_change(change):
    if change.get('type') == 'message.sent' and not heard.is_set():
        event.update(change)
        heard.set()

try:
    sio.connect(url, auth={'token': token}, transports=['polling'], wait_timeout=20)
except socketio.exceptions.ConnectionError as error:
    print(json.dumps({'refused': None, 'error': str(error)}), flush=True)
    sys.exit(2)
print('connected', flush=True)
# Bounded so a broken service cannot hang the run; the test sends the message at once.
if not heard.wait(timeout=30):
    print(json.dumps({'timeout': True}), flush=True)
    sio.disconnect()
    sys.exit(3)
print(json.dumps(event), flush=True)
sio.disconnect()
`;

test.before(async (context) => {
  context.server = await startTestServer();
  const dir = mkdtempSync(join(tmpdir(), 'python-socketio-'));
  onTestsEnd(async () => rmSync(dir, { recursive: true, force: true }));
  context.script = join(dir, 'listen.py');
  writeFileSync(context.script, SCRIPT);
});
test.after(async ({ server }) => {
  await server.close();
});

/** The script's output, line by line, as it comes; and how it exited. */
function runScript(script: string, url: string, token: string) {
  const child: ChildProcessWithoutNullStreams = spawn('/usr/bin/python3', [script, url, token]);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return {
    async nextLine(): Promise<string> {
      const next = await lines.next();
      if (next.done) throw new Error(`the script ended early: ${stderr}`);
      return next.value;
    },
    exited,
    stderr: () => stderr,
    kill: () => child.kill(),
  };
}

test('a Python agent hears the message another agent sends, as a change event', async ({
  server,
  script,
}) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  await joinWorkspace(server, owner, member, workspaceId);
  const python = runScript(script, server.baseUrl, member.api_token);
  try {
    assert.is(await python.nextLine(), 'connected', python.stderr());
    const sent = await send(server, owner, workspaceId, 'hello from node');
    assert.is(sent.status, 201);
    const change = JSON.parse(await python.nextLine()) as {
      type: string;
      workspace_id: string;
      actor: { agent_id: string };
      data: { text: string; message_id: string };
    };
    assert.is(change.type, 'message.sent');
    assert.is(change.workspace_id, workspaceId);
    assert.is(change.actor.agent_id, owner.agent_id);
    assert.is(change.data.text, 'hello from node');
    assert.is(change.data.message_id, sent.body.message_id);
    assert.is(await python.exited, 0, python.stderr());
  } finally {
    python.kill();
  }
});

test('a bad token is refused: connect_error data carries code unauthorized', async ({
  server,
  script,
}) => {
  const python = runScript(script, server.baseUrl, 'not-a-token');
  try {
    const line = JSON.parse(await python.nextLine()) as {
      refused?: { message?: string; data?: { code?: string; status?: number } };
    };
    assert.is(line.refused?.data?.code, 'unauthorized', JSON.stringify(line));
    assert.is(line.refused?.data?.status, 401);
    assert.is(await python.exited, 2);
  } finally {
    python.kill();
  }
});

test.run();
