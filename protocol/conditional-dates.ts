import { ServiceError } from './errors.ts';

/**
 * The date conditions of HTTP on a file (RFC 9110 §13.1.3 If-Modified-Since, §13.1.4
 * If-Unmodified-Since), judged against the saved_at of its version at the precision of an
 * HTTP-date, the second. The entity-tag conditions stay with the doors that check them (the byte
 * reply, the storage-link door); as RFC 9110 §13.2.2 orders them, a date condition is ignored
 * when its entity-tag counterpart is sent (If-Match before If-Unmodified-Since, If-None-Match
 * before If-Modified-Since), and a date that is not a valid HTTP-date is ignored.
 *
 * Reads (GET, HEAD): If-Unmodified-Since earlier than the version answers 412; If-Modified-Since
 * at or after it answers 304. Writes (a save, a delete), as Azure Blob storage judges them:
 * either failing answers 412 and nothing changes; a path with no file yet has no date, so both
 * are ignored there (Azure creates the blob).
 */

/** Request headers by lower-case name, as the doors hold them. */
export type RequestHeaders = Readonly<Record<string, string | undefined>>;

/** A moment as an HTTP-date (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`), to the second. */
export function httpDate(at: Date): string {
  const day = DAY_NAMES[at.getUTCDay()];
  const month = MONTH_NAMES[at.getUTCMonth()];
  return `${day}, ${pad(at.getUTCDate())} ${month} ${at.getUTCFullYear()} ${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}:${pad(at.getUTCSeconds())} GMT`;
}

/**
 * An HTTP-date in any of the three forms a recipient must accept (RFC 9110 §5.6.7): IMF-fixdate,
 * the obsolete RFC 850 form (a two-digit year: 00-69 is 20xx, 70-99 is 19xx) and asctime. The
 * seconds since the epoch, or null when it is none of them (then the condition is ignored).
 */
export function parseHttpDate(value: string): number | null {
  const text = value.trim();
  if (text.length > 64) return null;
  const parts = dateParts(text);
  if (!parts) return null;
  const [year, monthName, day, clock] = parts;
  const [hours, minutes, seconds] = clock.split(':').map(Number) as [number, number, number];
  const month = MONTH_NAMES.indexOf(monthName);
  if (hours > 23 || minutes > 59 || seconds > 60) return null;
  const at = new Date(Date.UTC(year, month, day, hours, minutes, Math.min(seconds, 59)));
  // 31 Feb and the like roll over into the next month: not a date.
  if (at.getUTCDate() !== day || at.getUTCFullYear() !== year) return null;
  return Math.floor(at.getTime() / 1000);
}

/** Year, month name, day and `hh:mm:ss` of the three forms, or null. */
function dateParts(text: string): [number, string, number, string] | null {
  const imf = IMF_FIXDATE.exec(text);
  if (imf) return [Number(imf[3]), imf[2]!, Number(imf[1]), imf[4]!];
  const rfc850 = RFC_850.exec(text);
  if (rfc850) {
    const short = Number(rfc850[3]);
    return [short < 70 ? 2000 + short : 1900 + short, rfc850[2]!, Number(rfc850[1]), rfc850[4]!];
  }
  const asctime = ASCTIME.exec(text);
  if (asctime) return [Number(asctime[4]), asctime[1]!, Number(asctime[2]), asctime[3]!];
  return null;
}

/** What a read's date conditions decide. */
export type ReadDates = 'serve' | 'not_modified' | 'precondition_failed';

/** A GET or HEAD of a version saved at `lastModified`. */
export function readDates(headers: RequestHeaders, lastModified: Date): ReadDates {
  const saved = toSeconds(lastModified);
  const unmodifiedSince = dateOf(headers, 'if-unmodified-since', 'if-match');
  if (unmodifiedSince !== null && saved > unmodifiedSince) return 'precondition_failed';
  const modifiedSince = dateOf(headers, 'if-modified-since', 'if-none-match');
  if (modifiedSince !== null && saved <= modifiedSince) return 'not_modified';
  return 'serve';
}

/** Whether a write (save or delete) may go ahead over the file as it is now (null: none). */
export function writeDatesHold(
  headers: RequestHeaders,
  current: { savedAt: Date } | null,
): boolean {
  if (current === null) return true;
  const saved = toSeconds(current.savedAt);
  const unmodifiedSince = dateOf(headers, 'if-unmodified-since', 'if-match');
  if (unmodifiedSince !== null && saved > unmodifiedSince) return false;
  const modifiedSince = dateOf(headers, 'if-modified-since', 'if-none-match');
  if (modifiedSince !== null && saved <= modifiedSince) return false;
  return true;
}

/** Whether the request names a date condition at all (a write checks nothing otherwise). */
export function hasDateCondition(headers: RequestHeaders): boolean {
  return headers['if-unmodified-since'] !== undefined || headers['if-modified-since'] !== undefined;
}

/** The REST and MCP refusal of a date condition that does not hold (`412 precondition_failed`). */
export function preconditionFailed(lastModified: Date, writing: boolean): ServiceError {
  return new ServiceError(
    'precondition_failed',
    writing
      ? `The file was last saved at ${httpDate(lastModified)} (its Last-Modified), so If-Unmodified-Since or If-Modified-Since does not hold: nothing was changed. Read the file again and decide with what you read.`
      : `The file was last saved at ${httpDate(lastModified)} (its Last-Modified), after the If-Unmodified-Since date: nothing was sent. Read it again without the header to get the newer version.`,
    { last_modified: httpDate(lastModified) },
  );
}

/**
 * The precondition of a save or a delete that names date conditions (actors/files/versions.ts
 * checks it in the command's transaction, against the file as it is there); undefined when the
 * request names none.
 */
export function writeDateCondition(
  headers: RequestHeaders,
): ((current: { savedAt: Date } | null) => void) | undefined {
  if (!hasDateCondition(headers)) return undefined;
  return (current) => {
    if (current !== null && !writeDatesHold(headers, current)) {
      throw preconditionFailed(current.savedAt, true);
    }
  };
}

/** The date in `name`, unless `etagHeader` is sent (it decides instead) or the date is bad. */
function dateOf(headers: RequestHeaders, name: string, etagHeader: string): number | null {
  const value = headers[name];
  if (value === undefined || headers[etagHeader] !== undefined) return null;
  return parseHttpDate(value);
}

function toSeconds(at: Date): number {
  return Math.floor(at.getTime() / 1000);
}

function pad(value: number): string {
  return String(value).padStart(2, '0');
}

const DAY_NAMES = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTH_NAMES = [
  'Jan',
  'Feb',
  'Mar',
  'Apr',
  'May',
  'Jun',
  'Jul',
  'Aug',
  'Sep',
  'Oct',
  'Nov',
  'Dec',
];
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const CLOCK = '(\\d{2}:\\d{2}:\\d{2})';
const IMF_FIXDATE = new RegExp(
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${CLOCK} GMT$`,
);
const RFC_850 = new RegExp(
  `^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${CLOCK} GMT$`,
);
const ASCTIME = new RegExp(
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ( \\d|\\d{2}) ${CLOCK} (\\d{4})$`,
);
