import { randomUUID } from 'node:crypto';
import { markdown } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { KNOWN_CONVENTIONS, TRUNK_FIELDS } from '../../protocol/conventions/known.ts';
import {
  conventionCodec,
  conventionStatus,
  conventionStep,
  newConvention,
} from '../../machines/convention.ts';
import { DatabaseError, UNIQUE_VIOLATION } from '../../storage/database-error.ts';
import {
  addConventionAxis,
  countConventionsBy,
  findConvention,
  insertConvention,
  listConventionPage,
  lockConventionRegistrations,
  nearDuplicateCandidates,
  relationsOf,
  upsertRelation,
  type ConventionListKey,
  type ConventionRow,
  type RelationRow,
} from '../../storage/conventions/conventions.ts';
import { deniedTerms } from './deny-list.ts';
import { nearDuplicate } from './near-duplicate.ts';
import { reservedCloseness } from './reserved-name.ts';
import { conventionProblems } from './rules.ts';
import { renderConvention, renderConventions } from './markdown.ts';
import { invalidCursor, readCursorPage, type PageCursor } from '../kernel/page.ts';
import { notFound } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import type { Handler } from '../kernel/handler.ts';

const BUILT_IN = new Set(KNOWN_CONVENTIONS.map((c) => c.name));

/** Conventions one agent may register in all, unless CONVENTIONS_PER_AGENT says otherwise. */
const DEFAULT_CONVENTIONS_PER_AGENT = 20;

function conventionView(
  services: Services,
  row: Pick<ConventionRow, 'name' | 'description' | 'dimensions' | 'authorId'> & {
    status: string;
    placement: string[] | null;
  },
) {
  return {
    name: row.name,
    description: row.description,
    status: row.status as 'unplaced' | 'placed' | 'refused',
    placement: row.status === 'placed' ? row.placement : null,
    built_in: BUILT_IN.has(row.name),
    author_id: row.authorId,
    trunk: [...TRUNK_FIELDS],
    dimensions: row.dimensions.map((d) => ({ ...d, values: d.values ? [...d.values] : undefined })),
    url: `${services.config.baseUrl}/conventions/${row.name}`,
  };
}

function relationView(row: RelationRow) {
  return {
    relation_id: row.relationId,
    a: row.a,
    b: row.b,
    shared_axes: row.sharedAxes,
    differences: row.differences,
    author_id: row.authorId,
    created_at: row.createdAt.toISOString(),
  };
}

/**
 * The cursor of the conventions list: the list keys of the page's last convention, its tier
 * counted from 1 and its cell path as JSON.
 */
const CONVENTIONS_CURSOR: PageCursor<readonly ['int', 'text', 'text'], ConventionListKey> = {
  kind: 'c',
  shape: ['int', 'text', 'text'],
  after: ([tier, place, name]) => {
    let cells: unknown = null;
    try {
      cells = JSON.parse(place);
    } catch {
      // Not a cell path: refused below.
    }
    if (!Array.isArray(cells) || !cells.every((cell) => typeof cell === 'string')) {
      throw invalidCursor();
    }
    return { tier: Number(tier) - 1, place: cells as string[], name };
  },
};

export const listConventions: Handler<'list_conventions'> = async (call, input) => {
  const { rows, nextCursor } = await readCursorPage(
    input,
    CONVENTIONS_CURSOR,
    (after, fetch) => listConventionPage(call.services.db(), after, fetch),
    ({ listKey }) => [String(listKey.tier + 1), JSON.stringify(listKey.place), listKey.name],
  );
  const conventions = rows.map((row) => conventionView(call.services, row));
  if (call.format === 'markdown') {
    return markdown(
      renderConventions(call.services, conventions, { nextCursor, limit: input.limit }),
    );
  }
  return { conventions, next_cursor: nextCursor };
};

export const getConvention: Handler<'get_convention'> = async (call, input) => {
  // Read from the table, not a live copy: another process may have placed it a moment ago.
  const row = await findConvention(call.services.db(), input.name);
  if (!row) throw notFound('convention');
  const relations = (await relationsOf(call.services.db(), input.name)).map(relationView);
  const view = { ...conventionView(call.services, row), relations };
  if (call.format === 'markdown') return markdown(renderConvention(call.services, view));
  return view;
};

export const registerConvention: Handler<'register_convention'> = async (
  { services, principal },
  input,
) => {
  if (!principal.isOperator) {
    const reserved = reservedCloseness(input);
    if (reserved) {
      throw new ServiceError(
        'convention_reserved',
        `${reserved} agent-help (help with one's own agent) is the operator's own consulting: it cannot be registered again under another name. To offer local-only help in one metro area, list on agent-help itself (delivery: local-only, metro: <metro>).`,
        { reserved: 'agent-help' },
      );
    }
  }
  const problems = conventionProblems(input);
  if (problems.length > 0) {
    throw new ServiceError(
      'convention_invalid',
      problems.map((p) => `${p.field}: ${p.problem}`).join('; '),
      { problems },
    );
  }
  const denied = deniedTerms(services.config.storeDenyTerms ?? [], [
    input.name,
    input.description,
    ...input.dimensions.flatMap((d) => [d.key, d.label, d.description, ...(d.values ?? [])]),
  ]);
  if (denied.length > 0) {
    throw new ServiceError(
      'content_refused',
      `The store does not take conventions with: ${denied.join(', ')}.`,
      { terms: denied },
    );
  }
  const cap = services.config.conventionsPerAgent ?? DEFAULT_CONVENTIONS_PER_AGENT;
  try {
    await services.conventions.create(async (tx) => {
      // One registration at a time, in every process: the count and the near-duplicate check
      // below see every convention registered before this one.
      await lockConventionRegistrations(tx);
      if (!principal.isOperator && cap > 0) {
        const registered = await countConventionsBy(tx, principal.agentId);
        if (registered >= cap) {
          throw new ServiceError(
            'limit_reached',
            `You have registered ${registered} conventions; one agent may register at most ${cap}. List on an existing convention instead (${services.config.baseUrl}/conventions).`,
            { limit: cap },
          );
        }
      }
      const duplicate = nearDuplicate(input, await nearDuplicateCandidates(tx, input));
      if (duplicate) {
        throw new ServiceError(
          'convention_exists',
          `"${duplicate.name}" exists already (${duplicate.reason}): list on it (${services.config.baseUrl}/conventions/${duplicate.name}), or relate yours to it if it truly differs.`,
          { existing: duplicate.name },
        );
      }
      await insertConvention(tx, {
        name: input.name,
        description: input.description,
        dimensions: input.dimensions,
        authorId: principal.agentId,
        createdAt: new Date(services.clock.now()),
        machine: conventionCodec.persist(newConvention(input.name)),
      });
      return { result: undefined };
    });
  } catch (error) {
    if (error instanceof DatabaseError && error.sqlState === UNIQUE_VIOLATION) {
      throw new ServiceError('convention_exists', `"${input.name}" exists already.`, {
        existing: input.name,
      });
    }
    throw error;
  }
  return { name: input.name, status: 'unplaced' as const };
};

/** Places or refuses a convention through its actor; its author hears of it. */
async function moveConvention(
  services: Services,
  operator: { agent_id: string; name: string },
  name: string,
  event: { type: 'place'; path: string[] } | { type: 'refuse'; reason: string },
) {
  const done = await services.conventions.command(name, async (actor) => {
    const { next, moved } = conventionStep(actor.state, { ...event, byOperator: true });
    if (!moved) return { result: actor };
    const status = conventionStatus(next);
    return {
      result: actor,
      next,
      changes: actor.record.authorId
        ? [
            {
              agentId: actor.record.authorId,
              type: 'convention.placed',
              actor: operator,
              data: {
                name,
                status,
                path: next.context.placement,
                ...(event.type === 'refuse' ? { reason: event.reason } : {}),
                from_operator: true,
              },
            },
          ]
        : [],
    };
  });
  if (!done) throw notFound('convention');
  return done;
}

export const placeConvention: Handler<'place_convention'> = async (
  { services, principal },
  input,
) => {
  await moveConvention(services, principal.agent, input.name, { type: 'place', path: input.path });
  return { name: input.name, status: 'placed' as const, path: input.path };
};

export const refuseConvention: Handler<'refuse_convention'> = async (
  { services, principal },
  input,
) => {
  await moveConvention(services, principal.agent, input.name, {
    type: 'refuse',
    reason: input.reason,
  });
  return { name: input.name, status: 'refused' as const, reason: input.reason };
};

export const relateConventions: Handler<'relate_conventions'> = async (
  { services, principal },
  input,
) => {
  if (input.a === input.b) {
    throw new ServiceError('invalid_input', 'A convention is not related to itself.', {
      field: 'b',
    });
  }
  const [a, b] = await Promise.all([
    services.conventions.get(input.a),
    services.conventions.get(input.b),
  ]);
  if (!a || !b) throw notFound('convention');
  if (
    !principal.isOperator &&
    a.record.authorId !== principal.agentId &&
    b.record.authorId !== principal.agentId
  ) {
    throw new ServiceError(
      'forbidden',
      'Only the author of one of the two conventions, or the operator, may relate them.',
    );
  }
  const sharedAxes = input.shared_axes ?? [];
  const problems = sharedAxes.flatMap((pair, i) => [
    ...(a.record.dimensions.some((d) => d.key === pair.a_field)
      ? []
      : [
          {
            field: `shared_axes[${i}].a_field`,
            problem: `"${input.a}" has no dimension ${pair.a_field}`,
          },
        ]),
    ...(b.record.dimensions.some((d) => d.key === pair.b_field)
      ? []
      : [
          {
            field: `shared_axes[${i}].b_field`,
            problem: `"${input.b}" has no dimension ${pair.b_field}`,
          },
        ]),
  ]);
  if (problems.length > 0) {
    throw new ServiceError(
      'convention_invalid',
      problems.map((p) => `${p.field}: ${p.problem}`).join('; '),
      { problems },
    );
  }
  // One order for a pair, so that relating b to a replaces a's relation to b.
  const [first, second] = input.a < input.b ? [input.a, input.b] : [input.b, input.a];
  const pairs =
    first === input.a
      ? sharedAxes
      : sharedAxes.map((p) => ({ axis: p.axis, a_field: p.b_field, b_field: p.a_field }));
  const relation = await services.commit(async (tx) => {
    const stored = await upsertRelation(tx, {
      relationId: randomUUID(),
      a: first,
      b: second,
      sharedAxes: pairs,
      differences: input.differences,
      authorId: principal.agentId,
      createdAt: new Date(services.clock.now()),
    });
    for (const pair of pairs) {
      await addConventionAxis(tx, first, pair.a_field, pair.axis);
      await addConventionAxis(tx, second, pair.b_field, pair.axis);
    }
    return { result: stored };
  });
  return relationView(relation);
};
