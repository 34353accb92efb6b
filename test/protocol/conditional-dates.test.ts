import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  hasDateCondition,
  httpDate,
  parseHttpDate,
  readDates,
  writeDateCondition,
  writeDatesHold,
} from '../../protocol/conditional-dates.ts';
import { ServiceError } from '../../protocol/errors.ts';

const test = suite('date conditions');

// Saved at 08:49:37.600: its Last-Modified is 08:49:37, the second it fell in.
const saved = new Date(Date.UTC(1994, 10, 6, 8, 49, 37, 600));
const SAVED = 'Sun, 06 Nov 1994 08:49:37 GMT';
const SECOND_BEFORE = 'Sun, 06 Nov 1994 08:49:36 GMT';
const SECOND_AFTER = 'Sun, 06 Nov 1994 08:49:38 GMT';

test('an HTTP-date is the IMF-fixdate of the second the moment falls in', () => {
  assert.is(httpDate(saved), SAVED);
  assert.is(httpDate(new Date(Date.UTC(2030, 0, 5, 3, 4, 5))), 'Sat, 05 Jan 2030 03:04:05 GMT');
  assert.is(httpDate(saved), saved.toUTCString(), 'the form Azure clients and listings use');
});

test('the three HTTP-date forms a recipient must accept read as the same second', () => {
  const second = Math.floor(saved.getTime() / 1000);
  assert.is(parseHttpDate(SAVED), second);
  assert.is(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT'), second);
  assert.is(parseHttpDate('Sun Nov  6 08:49:37 1994'), second);
  assert.is(parseHttpDate(`  ${SAVED} `), second, 'surrounding spaces are not part of it');
  assert.is(parseHttpDate('Monday, 01-Jan-30 00:00:00 GMT'), Date.UTC(2030, 0, 1) / 1000);
});

test('anything else is not a date, and a condition that is not a date is ignored', () => {
  for (const bad of [
    '',
    'yesterday',
    '1994-11-06T08:49:37Z',
    'Sun, 06 Nov 1994 08:49:37 UTC',
    'Sun, 6 Nov 1994 08:49:37 GMT',
    'Sun, 31 Feb 1994 08:49:37 GMT',
    'Sun, 06 Nov 1994 24:00:00 GMT',
    'Sun, 06 Nov 1994 08:60:00 GMT',
    'Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT',
    `${SAVED}${' '.repeat(100_000)}x`,
  ]) {
    assert.is(parseHttpDate(bad), null, JSON.stringify(bad.slice(0, 80)));
    assert.is(readDates({ 'if-unmodified-since': bad }, saved), 'serve');
    assert.is(readDates({ 'if-modified-since': bad }, saved), 'serve');
    assert.ok(writeDatesHold({ 'if-unmodified-since': bad }, { savedAt: saved }));
  }
});

test('a read: If-Modified-Since at or after the second saved is 304, before it is served', () => {
  assert.is(readDates({ 'if-modified-since': SAVED }, saved), 'not_modified');
  assert.is(readDates({ 'if-modified-since': SECOND_AFTER }, saved), 'not_modified');
  assert.is(readDates({ 'if-modified-since': SECOND_BEFORE }, saved), 'serve');
  assert.is(readDates({}, saved), 'serve');
});

test('a read: If-Unmodified-Since before the second saved fails, at or after it serves', () => {
  assert.is(readDates({ 'if-unmodified-since': SECOND_BEFORE }, saved), 'precondition_failed');
  assert.is(readDates({ 'if-unmodified-since': SAVED }, saved), 'serve');
  assert.is(readDates({ 'if-unmodified-since': SECOND_AFTER }, saved), 'serve');
  assert.is(
    readDates({ 'if-unmodified-since': SECOND_BEFORE, 'if-modified-since': SAVED }, saved),
    'precondition_failed',
    'If-Unmodified-Since is judged before If-Modified-Since (RFC 9110 §13.2.2)',
  );
});

test('an entity-tag condition sent beside its date counterpart decides instead of it', () => {
  assert.is(readDates({ 'if-unmodified-since': SECOND_BEFORE, 'if-match': '"x"' }, saved), 'serve');
  assert.is(readDates({ 'if-modified-since': SAVED, 'if-none-match': '"x"' }, saved), 'serve');
  assert.ok(
    writeDatesHold({ 'if-unmodified-since': SECOND_BEFORE, 'if-match': '*' }, { savedAt: saved }),
  );
  assert.ok(
    writeDatesHold({ 'if-modified-since': SAVED, 'if-none-match': '*' }, { savedAt: saved }),
  );
  assert.is(
    readDates({ 'if-unmodified-since': SECOND_BEFORE, 'if-none-match': '"x"' }, saved),
    'precondition_failed',
    'If-None-Match is no counterpart of If-Unmodified-Since',
  );
});

test('a write holds unless the file was saved after If-Unmodified-Since, or not after If-Modified-Since', () => {
  const current = { savedAt: saved };
  assert.not.ok(writeDatesHold({ 'if-unmodified-since': SECOND_BEFORE }, current));
  assert.ok(writeDatesHold({ 'if-unmodified-since': SAVED }, current));
  assert.not.ok(writeDatesHold({ 'if-modified-since': SAVED }, current));
  assert.ok(writeDatesHold({ 'if-modified-since': SECOND_BEFORE }, current));
  assert.ok(writeDatesHold({}, current));
});

test('a write to a path with no file has no date to judge: both conditions are ignored', () => {
  assert.ok(writeDatesHold({ 'if-unmodified-since': SECOND_BEFORE }, null));
  assert.ok(writeDatesHold({ 'if-modified-since': SECOND_AFTER }, null));
});

test('a write names no precondition unless it sends a date condition, and refuses with 412 precondition_failed', () => {
  assert.not.ok(hasDateCondition({ 'if-match': '"x"' }));
  assert.is(writeDateCondition({ 'if-none-match': '*' }), undefined);
  const condition = writeDateCondition({ 'if-unmodified-since': SECOND_BEFORE });
  assert.ok(condition);
  condition(null);
  condition({ savedAt: new Date(Date.UTC(1994, 10, 6, 8, 49, 36, 999)) });
  try {
    condition({ savedAt: saved });
    assert.unreachable('the condition held over a newer file');
  } catch (error) {
    assert.instance(error, ServiceError);
    const refusal = error as ServiceError;
    assert.is(refusal.code, 'precondition_failed');
    assert.is(refusal.status, 412);
    assert.equal(refusal.extra, { last_modified: SAVED });
  }
});

test.run();
