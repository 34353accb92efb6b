import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { STORAGE_FAILURES, storageProblem } from '../../actors/kernel/storage-problems.ts';
import { problemResponse } from '../../server/http/problem.ts';
import * as blobErrors from '../../storage/blobs/errors.ts';
import * as databaseErrors from '../../storage/database-error.ts';

/**
 * Issue 32 §5: one mapping for every storage error. Every error class storage/ exports (the
 * database's and the blob store's) is enumerated from the modules themselves, so that a new
 * one cannot be added without deciding how a caller is told it; each maps to a true answer.
 */

/** Classes a door never sees as a storage failure: each is turned into a refusal where it arises. */
const ANSWERED_WHERE_THEY_ARISE: Record<string, string> = {
  BlobTooLargeError: 'actors/files/versions.ts blobFailure: 413 payload_too_large',
  BlobNotFoundError: 'a read of a missing blob: 404 where the file is read',
  BlobRangeNotSatisfiableError: 'a Range past the end: 416 where the file is read',
};

/** A sample of each class, and the answer it must get. */
const SAMPLES: Record<string, { error: Error; code: string | undefined; status?: number }> = {
  DatabaseError: { error: new databaseErrors.DatabaseError('x', '23505'), code: undefined },
  StorageUnavailableError: {
    error: new databaseErrors.StorageUnavailableError('ECONNREFUSED'),
    code: 'storage_unavailable',
    status: 503,
  },
  StorageOutcomeUnknownError: {
    error: new databaseErrors.StorageOutcomeUnknownError('CONNECTION_CLOSED'),
    code: 'outcome_unknown',
    status: 503,
  },
  BlobStoreFullError: {
    error: new blobErrors.BlobStoreFullError('ENOSPC'),
    code: 'storage_full',
    status: 507,
  },
  BlobStoreUnavailableError: {
    error: new blobErrors.BlobStoreUnavailableError('EIO'),
    code: 'storage_unavailable',
    status: 503,
  },
};

function errorClasses(module: Record<string, unknown>): string[] {
  return Object.entries(module)
    .filter(([, value]) => typeof value === 'function' && value.prototype instanceof Error)
    .map(([name]) => name);
}

test('every error class storage/ exports is mapped to an answer, or answered where it arises', () => {
  for (const name of [...errorClasses(databaseErrors), ...errorClasses(blobErrors)]) {
    if (name in ANSWERED_WHERE_THEY_ARISE) continue;
    const sample = SAMPLES[name];
    assert.ok(sample, `${name} has a decided answer in this test (add it to SAMPLES)`);
    assert.is(storageProblem(sample.error)?.code, sample.code, name);
    if (sample.status) assert.is(storageProblem(sample.error)?.status, sample.status, name);
  }
});

test('every SQLSTATE of class 53 (insufficient resources) is a storage answer; a full disk is storage_full', () => {
  for (const state of ['53000', '53100', '53200', '53300', '53400']) {
    const problem = storageProblem(new databaseErrors.DatabaseError('x', state));
    assert.ok(problem, state);
    assert.is(problem.code, state === '53100' ? 'storage_full' : 'storage_unavailable', state);
  }
});

test('every storage answer says when to retry (Retry-After) and is never a 500', () => {
  for (const failure of STORAGE_FAILURES) {
    const sample = Object.values(SAMPLES).find(({ error }) => failure.matches(error)) ?? {
      error: new databaseErrors.DatabaseError(
        'x',
        failure.name.includes('53100') ? '53100' : '53200',
      ),
    };
    const problem = storageProblem(sample.error);
    assert.ok(problem, failure.name);
    const response = problemResponse(problem, 'http://service');
    assert.ok(response.status === 503 || response.status === 507, failure.name);
    assert.ok(Number(response.headers['retry-after']) > 0, `${failure.name}: Retry-After`);
    const body = JSON.parse(String(response.body)) as { code: string; detail: string };
    assert.is(body.code, failure.code);
    if (failure.code !== 'outcome_unknown')
      assert.match(body.detail, /nothing was (written|saved)/);
  }
});

test.run();
