import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { PYTHON_AZURE, clientSuite } from '../helpers/real-clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { storageLink } from '../helpers/storage-links.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * The Python Azure SDK (Debian's azure-storage-blob 12) against a container storage link:
 * uploads and downloads with `validate_content=True` (a Content-MD5 on every request, checked
 * both ways), metadata kept and read back by Get Blob Properties and List Blobs.
 */
const test = clientSuite<{ server: TestServer; dir: string }>(
  'the Python Azure SDK keeps MD5 and metadata over a storage link',
  PYTHON_AZURE,
);

test.before(async (context) => {
  context.server = await startTestServer({});
  context.dir = mkdtempSync(join(tmpdir(), 'python-azure-'));
});
test.after(async ({ server, dir }) => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const SCRIPT = `
import base64, json, sys
from azure.storage.blob import ContainerClient

container = ContainerClient.from_container_url(sys.argv[1])
body = b"bytes checked by MD5 on the way up and down\\n" * 100
blob = container.get_blob_client("py/checked.txt")
blob.upload_blob(body, validate_content=True, metadata={"mtime": "1700000000", "Origin": "python"})
down = blob.download_blob(validate_content=True).readall()
props = blob.get_blob_properties()
listed = [
    {"name": item.name, "metadata": item.metadata,
     "md5": base64.b64encode(bytes(item.content_settings.content_md5)).decode()}
    for item in container.list_blobs(include=["metadata"])
]
print(json.dumps({
    "same": down == body,
    "md5": base64.b64encode(bytes(props.content_settings.content_md5)).decode(),
    "metadata": props.metadata,
    "listed": listed,
}))
`;

function python(script: string, ...args: string[]): Promise<string> {
  // Asynchronous: the service answers from this same process.
  return new Promise((resolve, reject) => {
    execFile('/usr/bin/python3', [script, ...args], { timeout: 120_000 }, (error, out, err) => {
      if (error) reject(new Error(`python failed: ${err}`));
      else resolve(out);
    });
  });
}

test('uploads and downloads with validate_content, and reads back the MD5 and metadata', async ({
  server,
  dir,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  const script = join(dir, 'md5_metadata.py');
  writeFileSync(script, SCRIPT);
  const answer = JSON.parse(
    await python(script, `${link.container_url as string}?${link.sas_token as string}`),
  ) as {
    same: boolean;
    md5: string;
    metadata: Record<string, string>;
    listed: { name: string; metadata: Record<string, string>; md5: string }[];
  };
  const body = 'bytes checked by MD5 on the way up and down\n'.repeat(100);
  const md5 = createHash('md5').update(body).digest('base64');
  assert.ok(answer.same, 'the bytes came back whole');
  assert.is(answer.md5, md5);
  // Header names reach the service in lower case (both HTTP engines fold them).
  assert.equal(answer.metadata, { mtime: '1700000000', origin: 'python' });
  assert.equal(answer.listed, [
    { name: 'py/checked.txt', metadata: { mtime: '1700000000', origin: 'python' }, md5 },
  ]);
});

test.run();
