import { ServiceError } from '../../protocol/errors.ts';
import { pathParameters, restParameter } from '../../protocol/operation.ts';

/** An operation's route, compiled: its path as a regular expression with named groups. */
interface Route<T> {
  method: string;
  pattern: RegExp;
  names: string[];
  /** True when the last name is a rest parameter (`*name`). */
  rest: boolean;
  target: T;
}

export interface Match<T> {
  target: T;
  params: Record<string, string>;
}

/**
 * Matches a method and a percent-encoded path to a target. Static segments win over
 * parameters (so `/changes/wait` is never read as `/changes/:id`), and single parameters over
 * a rest parameter. A path that exists under another method answers 405 with the methods it
 * takes.
 *
 * A HEAD is answered by the path's GET route (RFC 9110 §9.3.2): the same target, whose answer
 * the engine sends without its body. So every GET route takes HEAD too, and is listed with it
 * where the methods of a path are named (`Allow`, preflights).
 *
 * Matching runs on the path as it arrived, still percent-encoded, so `%2F` is never a
 * separator; each parameter is decoded afterwards. A rest parameter (`*path`, one or more
 * segments) is decoded segment by segment and joined by `/`, and refused with `invalid_path`
 * when a segment is empty, `.` or `..` (also as `%2E`), holds NUL, or holds an encoded `/`:
 * a file path that comes through is one a file system and an object store read alike.
 */
export class Router<T> {
  private readonly routes: Route<T>[] = [];
  /** Paths without parameters, by `METHOD path`: found without a regular expression. */
  private readonly exact = new Map<string, T>();

  add(method: string, path: string, target: T): void {
    const names = pathParameters(path);
    const rest = restParameter(path) !== undefined;
    if (names.length === 0) this.exact.set(`${method} ${path}`, target);
    const source = path
      .split('/')
      .map((segment) =>
        segment.startsWith(':') ? '([^/]+)' : segment.startsWith('*') ? '(.+)' : escape(segment),
      )
      .join('/');
    this.routes.push({ method, pattern: new RegExp(`^${source}$`), names, rest, target });
    // Fewer parameters first: static beats dynamic; a rest parameter comes after all others.
    const weight = (route: Route<T>) => route.names.length + (route.rest ? 1000 : 0);
    this.routes.sort((a, b) => weight(a) - weight(b));
  }

  match(method: string, path: string): Match<T> {
    const head = method === 'HEAD';
    const exact =
      this.exact.get(`${method} ${path}`) ?? (head ? this.exact.get(`GET ${path}`) : undefined);
    if (exact !== undefined) return { target: exact, params: {} };
    const allowed = new Set<string>();
    for (const route of this.routes) {
      const found = route.pattern.exec(path);
      if (!found) continue;
      if (route.method !== method && !(head && route.method === 'GET')) {
        allowed.add(route.method);
        if (route.method === 'GET') allowed.add('HEAD');
        continue;
      }
      return { target: route.target, params: parameters(route, found) };
    }
    // A HEAD's refusal has the length of the GET's: the text is the one GET would send.
    const asked = head ? 'GET' : method;
    if (allowed.size > 0) {
      throw new ServiceError(
        'method_not_allowed',
        `${path} takes ${[...allowed].join(', ')}, not ${asked}.`,
        {
          allow: [...allowed],
        },
      );
    }
    throw routeNotFound(method, path);
  }
}

/** A route's parameters from its match: each decoded, a rest parameter as a path. */
function parameters<T>(route: Route<T>, found: RegExpExecArray): Record<string, string> {
  const params: Record<string, string> = {};
  const last = route.names.length - 1;
  route.names.forEach((name, index) => {
    const raw = found[index + 1] as string;
    params[name] = route.rest && index === last ? decodeRest(name, raw) : decodeSegment(raw);
  });
  return params;
}

/** The answer for a route that does not exist, or that the caller may not know of. */
export function routeNotFound(method: string, path: string): ServiceError {
  // A HEAD asks what GET would answer, and its answer says the length of GET's.
  const asked = method === 'HEAD' ? 'GET' : method;
  return new ServiceError(
    'not_found',
    `Nothing is at ${asked} ${path}. The routes are listed at /openapi.json.`,
  );
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ServiceError('invalid_input', 'A path segment is not valid percent-encoding.');
  }
}

/** A rest parameter's segments, each decoded, joined by `/`; refused where ambiguous. */
export function decodeRest(name: string, raw: string): string {
  const segments = raw.split('/');
  for (let index = 0; index < segments.length; index++) {
    const encoded = segments[index] as string;
    if (/%2f/i.test(encoded)) {
      throw invalidPath(name, 'holds an encoded `/` (%2F); `/` separates the segments');
    }
    const segment = decodeSegment(encoded);
    if (segment === '') throw invalidPath(name, 'has an empty segment (`//`, or `/` at an end)');
    if (segment === '.' || segment === '..') {
      throw invalidPath(name, 'has a `.` or `..` segment; name the path without them');
    }
    if (segment.includes('\u0000')) throw invalidPath(name, 'holds NUL (%00)');
    segments[index] = segment;
  }
  return segments.join('/');
}

function invalidPath(name: string, problem: string): ServiceError {
  return new ServiceError('invalid_path', `The \`${name}\` in the URL ${problem}.`, {
    field: name,
  });
}
