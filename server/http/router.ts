import { ServiceError } from '../../protocol/errors.ts';
import { parseFileName } from '../../protocol/files/path.ts';
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
 * parameters, under every method (so `/changes/wait` is never read as `/changes/:id`, and a GET
 * of `/payments/offchain`, a POST route, is 405 rather than `get_payment`), and single
 * parameters over a rest parameter. A path that exists under another method answers 405 with
 * the methods it takes.
 *
 * A HEAD is answered by the path's GET route (RFC 9110 §9.3.2): the same target, whose answer
 * the engine sends without its body. So every GET route takes HEAD too, and is listed with it
 * where the methods of a path are named (`Allow`, preflights).
 *
 * Matching runs on the path as it arrived, still percent-encoded, so `%2F` never splits a
 * single parameter (`:workspace_id`) or moves a route's boundary; each parameter is decoded
 * afterwards. A rest parameter (`*path`, one or more segments) is a file path: decoded
 * whole, `%2F` to `/` like any other escape (clients that encode the whole path, generated
 * OpenAPI clients and Azure SDKs for nested blob names, reach the same file), then held to
 * every file-path rule (protocol/files/path.ts) with `invalid_path`: an encoded `..`, `.`,
 * empty segment or control character is refused exactly as a plain one.
 */
export class Router<T> {
  private readonly routes: Route<T>[] = [];
  /** Paths without parameters, by method then path: found without a regular expression. */
  private readonly exact = new Map<string, Map<string, T>>();

  add(method: string, path: string, target: T): void {
    const names = pathParameters(path);
    const rest = restParameter(path) !== undefined;
    if (names.length === 0) {
      let paths = this.exact.get(method);
      if (!paths) this.exact.set(method, (paths = new Map()));
      paths.set(path, target);
    }
    const source = path
      .split('/')
      .map((segment) =>
        segment.startsWith(':')
          ? `([^/]+?)${escape(segment.replace(/^:[a-z_]+/, ''))}`
          : segment.startsWith('*')
            ? '(.+)'
            : escape(segment),
      )
      .join('/');
    this.routes.push({ method, pattern: new RegExp(`^${source}$`), names, rest, target });
    this.routes.sort((a, b) => weight(a) - weight(b));
  }

  match(method: string, path: string): Match<T> {
    const head = method === 'HEAD';
    const exact =
      this.exact.get(method)?.get(path) ?? (head ? this.exact.get('GET')?.get(path) : undefined);
    if (exact !== undefined) return { target: exact, params: NO_PARAMS };
    const allowed = new Set<string>();
    // Only the most specific routes that match a path are its routes, under every method:
    // `/payments/offchain` (a POST) is never read as `/payments/:payment_id` (a GET), so its
    // `Allow` names only what is served there.
    let specific = Infinity;
    for (const route of this.routes) {
      if (weight(route) > specific) break;
      const found = route.pattern.exec(path);
      if (!found) continue;
      specific = weight(route);
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

/** Fewer parameters first: static beats dynamic; a rest parameter comes after all others. */
function weight(route: Route<unknown>): number {
  return route.names.length + (route.rest ? 1000 : 0);
}

/** The parameters of a path that has none: one frozen object, not one per request. */
const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

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

/**
 * A rest parameter as the file path it names: decoded whole (`%2F` becomes `/`), then checked
 * by the one file-path parser every door uses, and handed over as spelt (the handler keeps the
 * spelling and compares its NFC key: protocol/files/path.ts parseFileName).
 */
export function decodeRest(name: string, raw: string): string {
  return parseFileName(decodeSegment(raw), name).asSent;
}
