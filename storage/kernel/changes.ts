import { randomUUID } from 'node:crypto';
import { encodeCursor, type ChangeEvent, type EventType } from '../../protocol/events.ts';
import { numbersOf, type Queryable } from '../driver.ts';
import type { Notification } from './notifications.ts';

/** The channel on which processes sharing a database tell each other of new changes. */
export const CHANGES_CHANNEL = 'agent_changes';

/**
 * Agents named by one notification of `CHANGES_CHANNEL`: its payload is `<sender>` then
 * `<agent_id> <seq>` pairs, all separated by spaces, and PostgreSQL refuses 8,000 bytes or more.
 * A pair is at most 57 bytes (a uuid, a number of up to 19 digits, two spaces), so 128 of them
 * and a sender of up to `SENDER_MAX_LENGTH` are 7,360. A listing told to 1,000 watchers was
 * 1,000 notifications until 0.53.4 (each queued at the commit, and parsed by every listening
 * process, this one too), 7 when 0.53.5 packed them by length in JavaScript; it is 8.
 */
export const PAIRS_PER_NOTIFICATION = 128;
const SENDER_MAX_LENGTH = 64;

/**
 * Who else must hear of the changes (PostgreSQL, where other processes listen): the
 * notifications are queued by the statement that records the changes, which is then the
 * transaction's last, and its COMMIT follows; not by a statement of their own after it (one
 * round trip fewer a write). `also`: other notifications of the same transaction (actor notices).
 */
export interface ChangeTelling {
  sender: string;
  also: readonly Notification[];
}

/**
 * A change about to be recorded for one agent, inside the transaction of the write. Its type is
 * one protocol/events.ts declares, so a misspelt type does not compile; the table itself keeps
 * any text (`appendChanges` takes `ChangeDraft<string>`, which its own tests use).
 */
export interface ChangeDraft<T extends string = EventType> {
  agentId: string;
  type: T;
  data: Record<string, unknown>;
  /**
   * Fields of the event's data that many drafts of one write share (pass the same object to
   * each): stored once for all of them (migration 029). The event's data is `sharedData` with
   * `data` over it.
   */
  sharedData?: Record<string, unknown>;
  workspaceId?: string;
  actor?: { agent_id: string; name: string };
}

export interface StoredChangeRow {
  agentId: string;
  seq: number;
  event: ChangeEvent;
  /**
   * The event as JSON text, when just recorded: made once from the text the write stored, so
   * that pushing it to a socket serialises nothing again.
   */
  json?: string;
  /** The event's workspace (null: none), when just recorded. */
  workspaceId?: string | null;
}

interface ChangeRow extends Record<string, unknown> {
  agent_id: string;
  seq: number;
  event_id: string;
  type: string;
  at: Date;
  workspace_id: string | null;
  actor: { agent_id: string; name: string } | null;
  data: Record<string, unknown>;
}

function toStored(row: ChangeRow): StoredChangeRow {
  const event: ChangeEvent = {
    event_id: row.event_id,
    cursor: encodeCursor(row.seq),
    type: row.type,
    at: row.at.toISOString(),
    data: row.data,
  };
  if (row.workspace_id) event.workspace_id = row.workspace_id;
  if (row.actor) event.actor = row.actor;
  return { agentId: row.agent_id, seq: row.seq, event };
}

/** What the insert hands back: the rest of each event is already in memory. */
interface NumberedRow extends Record<string, unknown> {
  event_id: string;
  seq: number;
  at: Date;
}

/** A draft as recorded: its event object and JSON text, from the texts sent to the insert. */
function recorded(
  draft: ChangeDraft<string>,
  eventId: string,
  actorJson: string | null,
  dataJson: string,
  row: NumberedRow,
): StoredChangeRow {
  const at = row.at.toISOString();
  const { middle, tail } = eventText(draft, actorJson, at);
  return new RecordedChange(draft, eventId, row.seq, at, middle, dataJson, tail);
}

/**
 * The parts of a recorded event's JSON text that every draft of one kind shares (type, time,
 * workspace, actor): `middle` goes between the cursor and the data, `tail` after the data.
 */
function eventText(
  draft: ChangeDraft<string>,
  actorJson: string | null,
  at: string,
): { middle: string; tail: string } {
  let tail = '';
  if (draft.workspaceId) tail += `,"workspace_id":${JSON.stringify(draft.workspaceId)}`;
  if (draft.actor && actorJson) tail += `,"actor":${actorJson}`;
  return {
    middle: `","type":${JSON.stringify(draft.type)},"at":"${at}","data":`,
    tail: `${tail}}`,
  };
}

/**
 * A change just recorded. Its JSON text is made at once (each socket is sent it); its event
 * object only when asked for: the sockets and waiters of this process read the text and the
 * workspace, so a listing told to 1,000 watchers builds no 1,000 copies of the listing's data
 * (.probe, the JavaScript of `appendChanges` for 1,001 drafts: 2.2 ms before).
 */
class RecordedChange implements StoredChangeRow {
  readonly json: string;
  #event: ChangeEvent | undefined;

  constructor(
    private readonly draft: ChangeDraft<string>,
    private readonly eventId: string,
    readonly seq: number,
    private readonly at: string,
    middle: string,
    dataJson: string,
    tail: string,
  ) {
    this.json = `{"event_id":"${eventId}","cursor":"${encodeCursor(seq)}${middle}${dataJson}${tail}`;
  }

  get agentId(): string {
    return this.draft.agentId;
  }

  get workspaceId(): string | null {
    return this.draft.workspaceId ?? null;
  }

  get event(): ChangeEvent {
    if (this.#event) return this.#event;
    const { draft } = this;
    const event: ChangeEvent = {
      event_id: this.eventId,
      cursor: encodeCursor(this.seq),
      type: draft.type,
      at: this.at,
      data: draft.sharedData ? { ...draft.sharedData, ...draft.data } : draft.data,
    };
    if (draft.workspaceId) event.workspace_id = draft.workspaceId;
    if (draft.actor) event.actor = draft.actor;
    return (this.#event = event);
  }
}

/**
 * Numbers and inserts changes in one statement, however many (a listing that reaches 1,000
 * watchers is one round trip, as is a single change). With several agents, their feed heads
 * are locked in agent-id order first, so that two writes touching the same agents cannot
 * deadlock: `locked` takes the locks sorted, and `heads` updates nothing before the whole of
 * `locked` has run (its count is a one-time filter, evaluated before the update scans).
 *
 * Drafts that tell several agents the same thing (same actor and data) share one payload row
 * (migration 029): a listing reaching 1,000 watchers writes its ~1 KB once, not 1,000 times.
 *
 * `send` runs the statement: the handle's `query` (the default), or its `lastQuery` when this
 * is the transaction's last statement (the commit path's, on PGlite: the COMMIT goes with it).
 *
 * `tell`: the notifications other processes hear it by (`ChangeTelling`), queued by the same
 * statement (`CHANGES_CHANNEL`'s, made in SQL from the numbers it gives).
 *
 * `alone`: no other transaction can run beside this one (PGlite's one connection), so no two
 * can deadlock and the heads are not locked first: the update locks what it moves. Locking
 * 1,000 heads first writes a WAL record for each: a listing told to 1,000 watchers, the save's
 * last statement on PGlite, 13.6-13.9 -> 12.0-12.1 ms (medians of 20).
 */
export async function appendChanges(
  tx: Queryable,
  drafts: readonly ChangeDraft<string>[],
  send: Queryable['query'] = (text, params) => tx.query(text, params),
  alone = false,
  tell?: ChangeTelling,
): Promise<StoredChangeRow[]> {
  if (drafts.length === 0) return [];
  if (drafts.length === 1) return [await appendOne(send, drafts[0] as ChangeDraft<string>, tell)];
  const ordered = [...drafts].sort((a, b) =>
    a.agentId < b.agentId ? -1 : a.agentId > b.agentId ? 1 : 0,
  );
  const eventIds = ordered.map(() => randomUUID());
  // Each distinct (actor, shared data) once: objects shared by drafts serialise once too. A
  // draft's own data stays in its row, unless the whole of its data is shared.
  // Keyed by the two texts themselves, not by one made of both: each text is one string,
  // hashed once, however many drafts share it (a listing's 1 KB told to 1,000 watchers).
  type Payload = { id: string; actor: string | null; data: string };
  const payloads = new Map<string | null, Map<string, Payload>>();
  const texts = new Map<object, string>();
  const jsonOf = (value: object) => {
    let text = texts.get(value);
    if (text === undefined) texts.set(value, (text = JSON.stringify(value)));
    return text;
  };
  const own: (string | null)[] = [];
  const payloadOf = ordered.map((draft) => {
    const actor = draft.actor ? jsonOf(draft.actor) : null;
    const data = jsonOf(draft.sharedData ?? draft.data);
    own.push(draft.sharedData ? jsonOf(draft.data) : null);
    let byData = payloads.get(actor);
    if (!byData) payloads.set(actor, (byData = new Map()));
    let payload = byData.get(data);
    if (!payload) byData.set(data, (payload = { id: randomUUID(), actor, data }));
    return payload;
  });
  const shared = [...payloads.values()].flatMap((byData) => [...byData.values()]);
  // Each distinct (type, workspace, payload) once, each draft naming its own by number: a
  // listing told to 1,000 watchers and the poster's own change send two kinds, not 1,001
  // types, workspaces and payload ids.
  const kinds = new Map<string, number>();
  const kindRows: { type: string; workspaceId: string | null; payloadId: string; first: number }[] =
    [];
  const kindOf = ordered.map((draft, i) => {
    const payloadId = (payloadOf[i] as Payload).id;
    const workspaceId = draft.workspaceId ?? null;
    const key = `${draft.type} ${workspaceId ?? ''} ${payloadId}`;
    let kind = kinds.get(key);
    if (kind === undefined) {
      kinds.set(key, (kind = kindRows.length + 1));
      kindRows.push({ type: draft.type, workspaceId, payloadId, first: i });
    }
    return kind;
  });
  // Each agent told once (the usual fan-out; `ordered` is sorted by agent): its head moves by
  // one, with no count to make.
  const oneEach = ordered.every((d, i) => i === 0 || d.agentId !== ordered[i - 1]?.agentId);
  const [numbers] = (await send(
    APPEND_SQL[tell ? 'telling' : alone ? 'alone' : 'locking'][oneEach ? 'oneEach' : 'any'],
    [
      ordered.map((d) => d.agentId),
      eventIds,
      kindOf,
      own,
      kindRows.map((k) => k.type),
      kindRows.map((k) => k.workspaceId),
      kindRows.map((k) => k.payloadId),
      shared.map((p) => p.id),
      shared.map((p) => p.actor),
      shared.map((p) => p.data),
      ...telling(tell),
    ],
  )) as { seqs: string | null; at: Date }[];
  const seqs = numbersOf(numbers?.seqs ?? null);
  // A missing feed head leaves its agent's changes out: nothing may be half-recorded.
  if (seqs.length !== ordered.length) throw new Error('no feed head for some agent');
  const at = (numbers as { at: Date }).at.toISOString();
  // The text each kind's events share, made once per kind, not per draft.
  const kindTexts = kindRows.map(({ first }) =>
    eventText(ordered[first] as ChangeDraft<string>, (payloadOf[first] as Payload).actor, at),
  );
  const stored = ordered.map((draft, i) => {
    const { middle, tail } = kindTexts[(kindOf[i] as number) - 1] as {
      middle: string;
      tail: string;
    };
    const data = merged((payloadOf[i] as Payload).data, own[i] ?? null);
    return new RecordedChange(
      draft,
      eventIds[i] as string,
      seqs[i] as number,
      at,
      middle,
      data,
      tail,
    );
  });
  // Sorted by agent already; within an agent, the drafts' order is the sequence's.
  return stored;
}

/**
 * `appendChanges`'s statement: the feed heads locked in agent-id order, the payloads stored,
 * each agent's head moved by its count of drafts, and the changes numbered from there in the
 * drafts' order. Each draft (`input`: agent, event id, kind, own data) names its kind by number
 * (`kinds`: type, workspace, payload), so what many drafts share is sent once.
 *
 * When every draft is for another agent (`oneEach`), each head moves by one and no count per
 * agent is made (1,000 watchers: 11.7 -> 10.2 ms on PGlite, the statement alone).
 *
 * It answers one row: the numbers in the drafts' order, as one array's text, and the time every
 * row took (the transaction's). Returning each inserted row instead cost a fan-out to 1,000
 * watchers 14.4 to 18.0 ms on PGlite against 11.7 (.probe, the statement alone, medians of
 * 40): PGlite serialises and the driver parses 1,000 event ids and times that the caller holds.
 */
function appendSqlOf(oneEach: boolean, alone: boolean, tell = false): string {
  const afterLocks = alone ? '' : ' and (select count(*) from locked) > 0';
  const numbering = oneEach
    ? `heads as (
  update feed_heads h set last_seq = h.last_seq + 1
  where h.agent_id = any($1::uuid[])${afterLocks}
  returning h.agent_id, h.last_seq
), numbered as (
  select i.*, heads.last_seq as seq from input i join heads on heads.agent_id = i.agent_id
)`
    : `counts as (
  select agent_id, count(*)::bigint as n from input group by agent_id
), heads as (
  update feed_heads h set last_seq = h.last_seq + c.n from counts c
  where h.agent_id = c.agent_id${afterLocks}
  returning h.agent_id, h.last_seq, c.n
), numbered as (
  select i.*, heads.last_seq - heads.n + row_number() over (partition by i.agent_id order by i.ord) as seq
  from input i join heads on heads.agent_id = i.agent_id
)`;
  const locked = alone
    ? ''
    : `locked as materialized (
  select agent_id from feed_heads where agent_id = any($1::uuid[])
  order by agent_id for update
), `;
  return `with ${locked}payloads as (
  insert into change_payloads (payload_id, actor, data)
  select id, actor::jsonb, data::jsonb from unnest($8::uuid[], $9::text[], $10::text[])
    as p(id, actor, data)
), input as (
  select * from unnest($1::uuid[], $2::uuid[], $3::int4[], $4::text[])
    with ordinality as t(agent_id, event_id, kind, data, ord)
), kinds as (
  select * from unnest($5::text[], $6::uuid[], $7::uuid[])
    with ordinality as k(type, workspace_id, payload_id, kind)
), ${numbering}, saved as (
  insert into changes (agent_id, seq, event_id, type, workspace_id, payload_id, data)
  select i.agent_id, i.seq, i.event_id, k.type, k.workspace_id, k.payload_id, i.data::jsonb
  from numbered i join kinds k on k.kind = i.kind
)
${tell ? `, ${TOLD_SQL}` : ''}
select array_agg(seq order by ord)::text as seqs, now() as at${tell ? ', (select count(*) from told) as told' : ''}
from numbered`;
}

/**
 * The agents a change statement reached, told on `CHANGES_CHANNEL` (`$11`, with the sender
 * `$12`) in notifications of `PAIRS_PER_NOTIFICATION` agents each, each agent once with its
 * newest number; then the transaction's other notifications (`$13` channels, `$14` payloads).
 * A CTE over `numbered`; the final select counts `told`, which makes PostgreSQL run it.
 */
const TOLD_SQL = `newest as (
  select agent_id, max(seq) as seq from numbered group by agent_id
), pairs as (
  select (row_number() over (order by agent_id) - 1) / ${PAIRS_PER_NOTIFICATION} as part, agent_id,
    ' ' || agent_id::text || ' ' || seq::text as pair
  from newest
), told as (
  select pg_notify($11, $12 || string_agg(pair, '' order by agent_id)) from pairs group by part
  union all
  select pg_notify(channel, payload) from unnest($13::text[], $14::text[]) as n(channel, payload)
)`;

/** The parameters `TOLD_SQL` reads, or none. */
function telling(tell: ChangeTelling | undefined): unknown[] {
  if (!tell) return [];
  if (tell.sender.length > SENDER_MAX_LENGTH) throw new Error('a sender past 64 characters');
  return [
    CHANGES_CHANNEL,
    tell.sender,
    tell.also.map((n) => n.channel),
    tell.also.map((n) => n.payload),
  ];
}

const APPEND_SQL = {
  locking: { any: appendSqlOf(false, false), oneEach: appendSqlOf(true, false) },
  telling: { any: appendSqlOf(false, false, true), oneEach: appendSqlOf(true, false, true) },
  alone: { any: appendSqlOf(false, true), oneEach: appendSqlOf(true, true) },
};

/** Two JSON objects' texts as one object's, the second's keys last (and so winning). */
function merged(shared: string, own: string | null): string {
  if (own === null || own === '{}') return shared;
  if (shared === '{}') return own;
  return `${shared.slice(0, -1)},${own.slice(1)}`;
}

async function appendOne(
  send: Queryable['query'],
  draft: ChangeDraft<string>,
  tell: ChangeTelling | undefined,
): Promise<StoredChangeRow> {
  const eventId = randomUUID();
  const actor = draft.actor ? JSON.stringify(draft.actor) : null;
  const data = JSON.stringify(
    draft.sharedData ? { ...draft.sharedData, ...draft.data } : draft.data,
  );
  // Numbering and inserting in one statement (and telling, with `tell`).
  const [row] = (await send(tell ? APPEND_ONE_TELLING_SQL : APPEND_ONE_SQL, [
    draft.agentId,
    eventId,
    draft.type,
    draft.workspaceId ?? null,
    actor,
    data,
    ...telling(tell),
  ])) as NumberedRow[];
  if (!row) throw new Error(`no feed head for agent ${draft.agentId}`);
  return recorded(draft, eventId, actor, data, row);
}

const APPEND_ONE_SQL = `with head as (
  update feed_heads set last_seq = last_seq + 1 where agent_id = $1 returning last_seq
)
insert into changes (agent_id, seq, event_id, type, workspace_id, actor, data)
select $1, head.last_seq, $2, $3, $4, $5::text::jsonb, $6::text::jsonb from head
returning event_id, seq, at`;

/** `APPEND_ONE_SQL` that also queues the notifications (`TOLD_SQL`'s parameters, from `$7`). */
const APPEND_ONE_TELLING_SQL = `with head as (
  update feed_heads set last_seq = last_seq + 1 where agent_id = $1 returning last_seq
), saved as (
  insert into changes (agent_id, seq, event_id, type, workspace_id, actor, data)
  select $1, head.last_seq, $2, $3, $4, $5::text::jsonb, $6::text::jsonb from head
  returning event_id, seq, at
), told as (
  select pg_notify($7, $8 || ' ' || $1::text || ' ' || seq::text) from saved
  union all
  select pg_notify(channel, payload) from unnest($9::text[], $10::text[]) as n(channel, payload)
)
select event_id, seq, at, (select count(*) from told) as told from saved`;

export async function readChanges(
  db: Queryable,
  agentId: string,
  afterSeq: number,
  limit: number,
): Promise<StoredChangeRow[]> {
  const rows = await db.query<ChangeRow>(
    `select c.agent_id, c.seq, c.event_id, c.type, c.at, c.workspace_id,
       coalesce(c.actor, p.actor) as actor,
       case when p.payload_id is null then c.data
         else p.data || coalesce(c.data, '{}'::jsonb) end as data
     from changes c left join change_payloads p on p.payload_id = c.payload_id
     where c.agent_id = $1 and c.seq > $2 order by c.seq limit $3`,
    [agentId, afterSeq, limit],
  );
  return rows.map(toStored);
}

/**
 * The agent's changes of one workspace after `afterSeq` (what a token restricted to that
 * workspace sees), and how far the read reached: `readTo` is the last change looked at, so
 * that the next read starts after the other workspaces' changes passed over rather than
 * scanning them again. With fewer than `limit` rows, the read reached the feed's head, read
 * in the same statement (one snapshot), so no change up to it can appear later.
 */
export async function readWorkspaceChanges(
  db: Queryable,
  agentId: string,
  workspaceId: string,
  afterSeq: number,
  limit: number,
): Promise<{ rows: StoredChangeRow[]; readTo: number }> {
  const found = await db.query<
    { head_seq: number | string } & { [K in keyof ChangeRow]: ChangeRow[K] | null }
  >(
    `select h.last_seq as head_seq, c.agent_id, c.seq, c.event_id, c.type, c.at,
       c.workspace_id, c.actor, c.data
     from feed_heads h left join lateral (
       select c.agent_id, c.seq, c.event_id, c.type, c.at, c.workspace_id,
         coalesce(c.actor, p.actor) as actor,
         case when p.payload_id is null then c.data
           else p.data || coalesce(c.data, '{}'::jsonb) end as data
       from changes c left join change_payloads p on p.payload_id = c.payload_id
       where c.agent_id = h.agent_id and c.seq > $2 and c.workspace_id = $3
       order by c.seq limit $4
     ) c on true
     where h.agent_id = $1
     order by c.seq`,
    [agentId, afterSeq, workspaceId, limit],
  );
  const rows = found.filter((row) => row.seq !== null).map((row) => toStored(row as ChangeRow));
  const head = Number(found[0]?.head_seq ?? afterSeq);
  const readTo =
    rows.length >= limit ? (rows.at(-1) as StoredChangeRow).seq : Math.max(afterSeq, head);
  return { rows, readTo };
}

export async function readFeedHead(
  db: Queryable,
  agentId: string,
): Promise<{ lastSeq: number; readSeq: number } | null> {
  const [row] = await db.query<{ last_seq: number; read_seq: number }>(
    'select last_seq, read_seq from feed_heads where agent_id = $1',
    [agentId],
  );
  return row ? { lastSeq: row.last_seq, readSeq: row.read_seq } : null;
}

/**
 * What a notification of `TOLD_SQL` says: who sent it and the newest sequence
 * number of each agent it names (none, for a payload of another form).
 */
export function parseChangeNotification(payload: string): {
  sender: string;
  heads: [agentId: string, seq: number][];
} {
  const words = payload.split(' ');
  const heads: [string, number][] = [];
  for (let i = 1; i + 1 < words.length; i += 2) {
    const seq = Number(words[i + 1]);
    if (words[i] && Number.isSafeInteger(seq)) heads.push([words[i] as string, seq]);
  }
  return { sender: words[0] ?? '', heads };
}
