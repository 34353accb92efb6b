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

const SETTINGS_SCRIPT = `
import json, sys
from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError
from azure.storage.blob import ContainerClient, ContentSettings

url = sys.argv[1]
container = ContainerClient.from_container_url(url)
# Past 8 bytes the upload goes as Put Block and Put Block List.
in_blocks = ContainerClient.from_container_url(url, max_single_put_size=8, max_block_size=8)
settings = ContentSettings(content_type="text/x-custom", content_language="de",
    content_disposition="attachment", cache_control="no-cache", content_encoding="identity")
blob = container.get_blob_client("py/settings.txt")
blob.upload_blob(b"settings kept\\n", content_settings=settings)
in_blocks.get_blob_client("py/blocks.txt").upload_blob(b"settings kept in blocks\\n",
    content_settings=settings)
container.get_blob_client("u\\u0308-nfd.txt").upload_blob(b"decomposed\\n")

def shown(cs):
    return {"content_type": cs.content_type, "content_language": cs.content_language,
            "content_disposition": cs.content_disposition, "cache_control": cs.cache_control,
            "content_encoding": cs.content_encoding}

props = blob.get_blob_properties()
try:
    blob.download_blob(etag=props.etag, match_condition=MatchConditions.IfModified).readall()
    not_modified = "downloaded"
except HttpResponseError as error:
    not_modified = " ".join([type(error).__name__, str(error.status_code), getattr(error.error_code, "value", str(error.error_code))])
print(json.dumps({
    "properties": shown(props.content_settings),
    "downloaded": shown(blob.download_blob().properties.content_settings),
    "listed": {item.name: shown(item.content_settings) for item in container.list_blobs()},
    "not_modified": not_modified,
}))
`;

test('keeps content settings and names as sent, and names the failed condition on a 304', async ({
  server,
  dir,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  const script = join(dir, 'content_settings.py');
  writeFileSync(script, SETTINGS_SCRIPT);
  const answer = JSON.parse(
    await python(script, `${link.container_url as string}?${link.sas_token as string}`),
  ) as {
    properties: Record<string, string | null>;
    downloaded: Record<string, string | null>;
    listed: Record<string, Record<string, string | null>>;
    not_modified: string;
  };
  const sent = {
    content_type: 'text/x-custom',
    content_language: 'de',
    content_disposition: 'attachment',
    cache_control: 'no-cache',
    content_encoding: 'identity',
  };
  assert.equal(answer.properties, sent, 'get_blob_properties');
  assert.equal(answer.downloaded, sent, 'download_blob');
  assert.equal(answer.listed, {
    'py/blocks.txt': sent,
    'py/settings.txt': sent,
    // Listed as uploaded (NFD), with the type inferred from the path: none was sent.
    'u\u0308-nfd.txt': {
      content_type: 'text/plain; charset=utf-8',
      content_language: null,
      content_disposition: null,
      cache_control: null,
      content_encoding: null,
    },
  });
  // The SDK maps the error code, not the status: Azure's ConditionNotMet on a 304 is its
  // ResourceModifiedError (12.15 maps no 304 to ResourceNotModifiedError); without the code it
  // raised a bare HttpResponseError.
  assert.is(answer.not_modified, 'ResourceModifiedError 304 ConditionNotMet');
});

test.run();
