import { Server as SocketIoServer } from 'socket.io';
import { CAPABILITIES } from '../actors/capabilities.ts';
import { databaseJobStore } from '../actors/kernel/scheduled-jobs.ts';
import { Services } from '../actors/kernel/services.ts';
import { ServiceError } from '../protocol/errors.ts';
import type { Operation } from '../protocol/operation.ts';
import { generateOpenApi } from '../protocol/openapi.ts';
import { OPERATION_LIST } from '../protocol/operations.ts';
import { SOCKET_PATH } from '../protocol/message-signature.ts';
import { SERVICE_VERSION } from '../protocol/version.ts';
import { openStorage, type Driver } from '../storage/open.ts';
import { capabilityServiceConfig, type Config } from './config.ts';
import { loadDocuments } from './documents.ts';
import { HealthProbe } from './health-probe.ts';
import { ListenError, StartRefusal } from './listen-error.ts';
import type { EngineRequest, EngineResponse, HttpEngine, RequestHandler } from './http/engine.ts';
import {
  PUBLIC_CORS_HEADERS,
  PUBLIC_PREFLIGHT,
  preflightResponse,
  SOCKET_PREFLIGHT,
} from './http/cors.ts';
import { createNodeEngine } from './http/node-engine.ts';
import { bearerToken, serveOperation, type ServeOptions } from './http/operation-route.ts';
import { asServiceError, jsonResponse, problemResponse } from './http/problem.ts';
import { addressOf } from './http/client-address.ts';
import { admission, NO_RATE_LIMIT, requestLimiter } from './http/rate-limit.ts';
import { leaseSharedCredit } from '../actors/kernel/shared-rate-limits.ts';
import { routeNotFound, Router } from './http/router.ts';
import { agentForToken } from './invoke.ts';
import { TEST_OPERATIONS } from './http/test-operations.ts';
import { createUwsEngine } from './http/uws-engine.ts';
import { loadUwsBinary } from './http/uws-load.ts';
import { startMailDoor, type MailDoor } from './email/door.ts';
import { confirmedCommandRunner, mailRouter } from './email/mailgate.ts';
import { mailSignUpLimits } from './email/sign-up-limits.ts';
import { mcpDoorOnFirstRequest } from './mcp/door-on-first-request.ts';
import { Scheduler } from './scheduler.ts';
import { attachSocketDoor, socketRefusal } from './socket/door.ts';
import { HandshakeTurns } from './socket/handshake-turns.ts';
import { OwnRoomlessAdapter } from './socket/own-room-adapter.ts';
import { createStorageLinkDoor, STORAGE_LINK_PREFIX } from './storage-link/door.ts';

export interface RunningService {
  port: number;
  baseUrl: string;
  engine: 'uws' | 'node';
  /** The SMTP door's port (SMTP_PORT=0 picks one); null when it runs none (SMTP_PORT=off). */
  smtpPort: number | null;
  services: Services;
  scheduler: Scheduler;
  /** HTTP requests taken and not yet answered or aborted (tests: none is left behind). */
  openHttpRequests(): number;
  /** Stops taking requests, ends open ones, flushes actors, closes storage. */
  close(): Promise<void>;
}

type Target =
  | { kind: 'operation'; operation: Operation; options: ServeOptions }
  | { kind: 'static'; serve: () => EngineResponse }
  | { kind: 'mcp' }
  | { kind: 'health' };

function chooseEngine(config: Config, handler: RequestHandler): HttpEngine {
  if (config.httpEngine !== 'node') {
    const { uws, reason } = loadUwsBinary();
    if (uws) return createUwsEngine(uws, handler);
    if (config.httpEngine === 'uws') {
      throw new StartRefusal(
        `cannot start: HTTP_ENGINE=uws, but ${reason}; set HTTP_ENGINE=auto (node:http where uWS cannot load) or HTTP_ENGINE=node`,
      );
    }
    // One line, the engine that runs and why: on Node 22 and 24 this is the normal start.
    config.log(`http engine: node:http (${reason})`);
  }
  return createNodeEngine(handler);
}

/** How long a refused start may spend letting go of what it opened. */
const UNDO_DEADLINE_MS = 5000;

/**
 * Opens storage, wires the doors and listens. The one entry point of main.ts and tests.
 *
 * A start refused part of the way (the SMTP port is taken after HTTP listens, a capability's
 * start-up step fails) lets go of what it had opened before it throws, last opened first:
 * ports, threads, the database. So a caller that goes on is not left with half a service, and a
 * process that exits at once never exits with a listening socket or a database thread still at
 * work (whose teardown at exit is the runtime's, not ours to bound).
 */
export async function startService(config: Config, storage?: Driver): Promise<RunningService> {
  const undo: (() => unknown)[] = [];
  try {
    return await startWith(config, storage, undo);
  } catch (error) {
    const undone = (async () => {
      for (const step of undo.reverse()) {
        try {
          await step();
        } catch {
          // The next step all the same: the refusal is what the caller must hear.
        }
      }
    })();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      undone,
      new Promise((resolve) => (timer = setTimeout(resolve, UNDO_DEADLINE_MS).unref())),
    ]);
    clearTimeout(timer);
    throw error;
  }
}

async function startWith(
  config: Config,
  storage: Driver | undefined,
  undo: (() => unknown)[],
): Promise<RunningService> {
  const driver =
    storage ?? (await openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir }));
  // A driver the caller gave stays the caller's to close.
  if (!storage) undo.push(() => driver.close());
  const logError = (error: unknown) =>
    config.log(
      `internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );

  // The base URL may depend on the port bound; routes read it through this holder.
  const links = { baseUrl: config.baseUrl ?? '' };
  const router = new Router<Target>();
  // Listening starts before the wiring ends (the base URL may need the bound port): until
  // `ready`, every door answers 503 rather than half a service.
  let ready = false;
  let stopping = false;
  // Per address: every request but documents and /health; and sign-ups, more strictly.
  // On PostgreSQL (several processes may share it) the limits are shared: leased credit.
  const limiting = {
    ...(config.clock && { clock: config.clock }),
    addressOf: addressOf(config.trustedProxies ?? null),
    lease:
      driver.kind === 'postgres'
        ? (...lease: [string, Parameters<typeof leaseSharedCredit>[2], number]) =>
            leaseSharedCredit(services, ...lease)
        : undefined,
  };
  const requests = requestLimiter(
    'requests',
    { limit: config.rateLimitPerMinute || Infinity, windowSeconds: 60 },
    limiting,
  );
  const signUps = requestLimiter(
    'sign-ups',
    { limit: config.signUpLimitPerHour || Infinity, windowSeconds: 3600 },
    limiting,
  );
  // MCP's tools are admitted as REST operations are: waiting for shared credit when needed.
  const admit = async (operation: Operation, request: EngineRequest) => {
    if (operation.signUpLimited) await signUps.take(request);
  };

  // Every answer of the REST routes is readable from any web page: the service authenticates
  // with bearer tokens, never cookies, so a page learns nothing it could not fetch itself.
  // /mcp is the exception: its door admits only the origins it trusts (DNS rebinding).
  const handler: RequestHandler = async (request: EngineRequest) => {
    const response = await route(request);
    if (
      request.headers.origin !== undefined &&
      request.path !== '/mcp' &&
      !('access-control-allow-origin' in response.headers)
    )
      Object.assign(response.headers, PUBLIC_CORS_HEADERS);
    return response;
  };

  const route = async (request: EngineRequest): Promise<EngineResponse> => {
    try {
      if (!ready || stopping) {
        throw new ServiceError(
          'service_unavailable',
          `The service is ${stopping ? 'stopping' : 'starting'}; try again in a moment.`,
        );
      }
      // Storage links speak Azure's protocol, errors included: a door of their own.
      if (request.path.startsWith(`${STORAGE_LINK_PREFIX}/`)) {
        return await serveStorageLink(request, await admission(requests, request));
      }
      const { target, params } = router.match(request.method, request.path);
      if (target.kind === 'static') return target.serve();
      if (target.kind === 'health') return await health();
      // The request, not its address: reading uWS's peer address costs, and only a limit needs it.
      const limits = await requests.take(request);
      let response: EngineResponse;
      // Each further JSON-RPC message of a batch counts as one more request (server/mcp/door.ts).
      if (target.kind === 'mcp') response = await serveMcp(request, () => requests.take(request));
      else {
        // An operator-only operation is no route at all to anyone else (not even a 401).
        if (target.operation.operatorOnly && !(await callerIsOperator(request))) {
          throw routeNotFound(request.method, request.path);
        }
        if (target.operation.signUpLimited) await signUps.take(request);
        response = await serveOperation(
          services,
          target.operation,
          params,
          request,
          target.options,
        );
      }
      // The door's own count (a batch's last message) is newer than the request's.
      if (limits !== NO_RATE_LIMIT) response.headers = { ...limits, ...response.headers };
      return response;
    } catch (error) {
      // A browser's preflight for an operation's path: the methods it takes.
      if (
        request.method === 'OPTIONS' &&
        error instanceof ServiceError &&
        error.code === 'method_not_allowed'
      ) {
        return preflightResponse('*', [...(error.extra.allow as string[]), 'OPTIONS']);
      }
      return problemResponse(asServiceError(error, logError), links.baseUrl);
    }
  };

  // A load balancer stops sending traffic on 503; the service reconnects by itself meanwhile.
  // smtp_port is known once the SMTP door listens (before `ready`).
  let smtpPort: number | null = null;
  const healthAnswers = () => {
    const shown = smtpPort === null ? {} : { smtp_port: smtpPort };
    const healthy = jsonResponse(200, {
      status: 'ok',
      service_version: SERVICE_VERSION,
      ...shown,
    });
    const degraded = jsonResponse(503, {
      status: 'degraded',
      database: 'unreachable',
      service_version: SERVICE_VERSION,
      ...shown,
    });
    degraded.headers['retry-after'] = '5';
    // After SIGTERM, for SHUTDOWN_DRAIN_MS: a proxy's check takes the process out of rotation
    // while it still serves whatever reaches it.
    const draining = jsonResponse(503, {
      status: 'draining',
      service_version: SERVICE_VERSION,
      ...shown,
    });
    return { healthy, degraded, draining };
  };
  let answers = healthAnswers();
  let draining = false;
  // From the background probe, never behind agents' work: within 100 ms, always.
  const health = async () =>
    draining
      ? answers.draining
      : (await healthProbe.reachable())
        ? answers.healthy
        : answers.degraded;
  const callerIsOperator = async (request: EngineRequest) => {
    try {
      return (await agentForToken(services, bearerToken(request.headers))).principal.isOperator;
    } catch {
      return false;
    }
  };

  const engine = chooseEngine(config, handler);
  // No `cors` option: engine.io would run it as a middleware, and a middleware makes it keep a
  // response wrapper alive for every WebSocket (about 0.4 KiB an idle socket). The polling
  // transport's answers carry the CORS headers from the `headers` event below, and a browser's
  // preflight there is answered by the router (SOCKET_PREFLIGHT), which each engine hands it.
  // A crowd's handshakes (a client's first request, before engine.io makes a socket of it) go
  // through one per turn of the event loop, a lone one at once: uWS hands over hundreds of
  // requests in one poll, and engine.io's and socket.io's work for each ran in one stretch
  // that every other request waited behind. One that left while it waited is dropped
  // unanswered. WebSocket upgrades on uWS do not wait (`handshakeWait` there says why).
  const engineHandshakes = new HandshakeTurns();
  const io = new SocketIoServer({
    serveClient: false,
    adapter: OwnRoomlessAdapter,
    allowRequest: (request, allow) => {
      const gone = engine.handshakeWait(request);
      if (!gone) return allow(null, true);
      engineHandshakes.takeNowOrLater(() => {
        if (!gone()) allow(null, true);
      });
    },
  });
  io.use((_socket, next) => {
    if (ready && !stopping) return next();
    next(
      socketRefusal(
        new ServiceError('service_unavailable', 'The service is starting or stopping; retry.'),
        links.baseUrl,
      ),
    );
  });
  engine.attachSocketIo(io);
  io.engine.on('headers', (headers: Record<string, string>) =>
    Object.assign(headers, PUBLIC_CORS_HEADERS),
  );
  const port = await engine.listen(config.host, config.port).catch((error: unknown) => {
    throw new ListenError('HTTP', config.host, config.port, error);
  });
  undo.push(async () => {
    engine.stopListening();
    await engine.close(0);
    await new Promise<void>((resolve) => void io.close(() => resolve()));
  });
  links.baseUrl =
    config.baseUrl ??
    `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  const baseUrl = links.baseUrl;

  const services = new Services(
    driver,
    {
      baseUrl,
      operatorName: config.operatorName,
      termsUrl: config.termsUrl ?? `${baseUrl}/terms`,
      privacyUrl: config.privacyUrl ?? `${baseUrl}/privacy`,
      actorCapacity: config.actorCapacity,
      clock: config.clock,
      dataDir: config.dataDir,
      strictProtocol: config.strictProtocol,
      // Each capability's own settings, as it reads them (actors/<capability>/settings.ts).
      ...capabilityServiceConfig(config, { baseUrl }),
    },
    CAPABILITIES,
  );
  const healthProbe = new HealthProbe(() => services.databaseReachable());
  undo.push(async () => {
    services.beginShutdown();
    await services.flush();
  });
  // Each capability's start-up step, in the order of the list (actors/capabilities.ts).
  for (const capability of CAPABILITIES) {
    await capability.startUp?.(services, config.log);
    if (capability.shutDown) undo.push(() => capability.shutDown?.(services));
  }
  await services.listenToOtherProcesses();
  // A command held for confirmation runs the same way whether confirmed by a reply to the SMTP
  // door or by its link over HTTP (which any process may serve, SMTP door or not).
  services.provide('confirmedRunner', confirmedCommandRunner(services, config.log));

  // Test-only operations bring their own handlers (config.ts, testOperations).
  const operations = [
    ...OPERATION_LIST.map((operation) => ({
      operation,
      // Anonymous Idempotency-Keys are each caller address's own (server/http/idempotency.ts).
      options: { log: logError, addressOf: limiting.addressOf },
    })),
    ...(config.testOperations
      ? TEST_OPERATIONS.map(({ operation, handler }) => ({
          operation,
          options: { handler, log: logError, addressOf: limiting.addressOf },
        }))
      : []),
  ];
  // Each GET route answers HEAD too (server/http/router.ts); a file's HEAD reads no content.
  for (const { operation, options } of operations)
    router.add(operation.method, operation.path, { kind: 'operation', operation, options });
  const documents = loadDocuments(services);
  // The service's own address answers what to read first, so `curl <BASE_URL>` is a start.
  documents.set('/', documents.get('/llms.txt')!);
  for (const [path, document] of documents) {
    const response: EngineResponse = {
      status: 200,
      headers: { 'content-type': document.contentType, ...PUBLIC_CORS_HEADERS },
      body: document.body,
    };
    router.add('GET', path, { kind: 'static', serve: () => response });
    router.add('OPTIONS', path, { kind: 'static', serve: () => PUBLIC_PREFLIGHT });
  }
  const openApi = jsonResponse(
    200,
    generateOpenApi(
      baseUrl,
      operations.map(({ operation }) => operation),
    ),
  );
  Object.assign(openApi.headers, PUBLIC_CORS_HEADERS);
  router.add('GET', '/openapi.json', { kind: 'static', serve: () => openApi });
  router.add('OPTIONS', '/openapi.json', { kind: 'static', serve: () => PUBLIC_PREFLIGHT });
  router.add('GET', '/health', { kind: 'health' });
  router.add('OPTIONS', SOCKET_PATH, { kind: 'static', serve: () => SOCKET_PREFLIGHT });
  const serveStorageLink = createStorageLinkDoor(services, logError);
  const serveMcp = mcpDoorOnFirstRequest(
    services,
    baseUrl,
    logError,
    admit,
    config.mcpAllowedOrigins,
  );
  for (const method of ['POST', 'GET', 'DELETE', 'OPTIONS'])
    router.add(method, '/mcp', { kind: 'mcp' });
  attachSocketDoor(io, services, {
    baseUrl,
    socketsPerAgent: config.socketsPerAgent || Infinity,
    log: logError,
  });
  // Work done on time, whoever asks (invites run out even when nobody looks): each capability's
  // jobs, on the schedule it declares unless the environment says otherwise (JOB_SCHEDULE_*).
  const scheduler = new Scheduler({
    jobs: CAPABILITIES.flatMap((capability) => capability.jobs ?? []).map((job) => ({
      name: job.name,
      schedule: job.schedule,
      run: (now: Date) => job.run(services, now),
    })),
    schedules: config.jobSchedules,
    store: databaseJobStore(services.driver),
    clock: services.clock,
    log: config.log,
    leaseMs: config.jobLeaseSeconds * 1000,
  });
  await scheduler.start();
  undo.push(() => scheduler.stop());
  // The email door: sign-ups, commands and replies by SMTP (server/email/).
  let mailDoor: MailDoor | null = null;
  if (config.smtpPort !== null) {
    mailDoor = await startMailDoor(services, {
      host: config.smtpHost,
      port: config.smtpPort,
      // Sign-ups by mail take the HTTP and MCP doors' own per-address limit, and one of all mail.
      router: mailRouter(services, config.log, mailSignUpLimits(services, signUps, limiting)),
      log: config.log,
      // Per address, as the HTTP doors count requests.
      messagesPerMinute: config.rateLimitPerMinute,
    }).catch((error: unknown) => {
      throw new ListenError('SMTP', config.smtpHost, config.smtpPort as number, error);
    });
    smtpPort = mailDoor.port;
    answers = healthAnswers();
  }
  healthProbe.start();
  ready = true;

  return {
    port,
    baseUrl,
    engine: engine.name,
    smtpPort,
    services,
    scheduler,
    openHttpRequests: () => engine.openRequests,
    async close() {
      // The drain: still serving, but /health says 503 so a proxy sends the work elsewhere.
      if (config.shutdownDrainMs > 0 && !stopping) {
        draining = true;
        await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
      }
      stopping = true;
      // Parked long-polls answer now with what they have; their callers ask again elsewhere.
      services.beginShutdown();
      await mailDoor?.close();
      // No new connection; then each socket's connection is closed under it, which a socket.io
      // client takes as a lost connection and reconnects (to another process, behind a proxy)
      // with its cursor. (A socket.io disconnect would tell the client not to come back.)
      engine.stopListening();
      for (const socket of io.of('/').sockets.values()) socket.conn.close();
      // Requests in flight finish, within SHUTDOWN_TIMEOUT_MS; new ones on open connections
      // answer 503 service_unavailable, which is safe to retry. The engine before io.close():
      // on node:http, io.close() closes the HTTP server, which would wait for open connections.
      await engine.close(config.shutdownTimeoutMs);
      // io.close() also undoes what attaching to uWS changed in socket.io for the whole process.
      await new Promise<void>((resolve) => void io.close(() => resolve()));
      await scheduler.stop();
      healthProbe.stop();
      for (const capability of [...CAPABILITIES].reverse()) await capability.shutDown?.(services);
      await services.flush();
      await driver.close();
    },
  };
}
