import { ServiceError } from '../../protocol/errors.ts';
import { pathParameters } from '../../protocol/operation.ts';

/** An operation's route, compiled: its path as a regular expression with named groups. */
interface Route<T> {
  method: string;
  pattern: RegExp;
  names: string[];
  target: T;
}

export interface Match<T> {
  target: T;
  params: Record<string, string>;
}

/**
 * Matches a method and a percent-encoded path to a target. Static segments win over
 * parameters (so `/changes/wait` is never read as `/changes/:id`). A path that exists under
 * another method answers 405 with the methods it takes.
 */
export class Router<T> {
  private readonly routes: Route<T>[] = [];
  /** Paths without parameters, by `METHOD path`: found without a regular expression. */
  private readonly exact = new Map<string, T>();

  add(method: string, path: string, target: T): void {
    const names = pathParameters(path);
    if (names.length === 0) this.exact.set(`${method} ${path}`, target);
    const source = path
      .split('/')
      .map((segment) => (segment.startsWith(':') ? '([^/]+)' : escape(segment)))
      .join('/');
    this.routes.push({ method, pattern: new RegExp(`^${source}$`), names, target });
    // Fewer parameters first: static beats dynamic.
    this.routes.sort((a, b) => a.names.length - b.names.length);
  }

  match(method: string, path: string): Match<T> {
    const exact = this.exact.get(`${method} ${path}`);
    if (exact !== undefined) return { target: exact, params: {} };
    const allowed = new Set<string>();
    for (const route of this.routes) {
      const found = route.pattern.exec(path);
      if (!found) continue;
      if (route.method !== method) {
        allowed.add(route.method);
        continue;
      }
      const params: Record<string, string> = {};
      route.names.forEach((name, index) => {
        params[name] = decodeSegment(found[index + 1] as string);
      });
      return { target: route.target, params };
    }
    if (allowed.size > 0) {
      throw new ServiceError(
        'method_not_allowed',
        `${path} takes ${[...allowed].join(', ')}, not ${method}.`,
        {
          allow: [...allowed],
        },
      );
    }
    throw routeNotFound(method, path);
  }
}

/** The answer for a route that does not exist, or that the caller may not know of. */
export function routeNotFound(method: string, path: string): ServiceError {
  return new ServiceError(
    'not_found',
    `Nothing is at ${method} ${path}. The routes are listed at /openapi.json.`,
  );
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ServiceError('invalid_input', 'A path segment is not valid percent-encoding.');
  }
}
