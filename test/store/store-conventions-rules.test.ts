import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  postedDirect,
  startDirectStore,
  type DirectStoreContext,
} from '../helpers/direct-store.ts';

/**
 * Conventions related by their authors, through the direct door. Listed and shown, registered
 * and placed at the real doors: store-conventions.test.ts.
 */
const test = suite<DirectStoreContext>('store conventions, without a transport');

test.before(async (context) => {
  Object.assign(context, await startDirectStore());
});
test.after(async ({ server }) => {
  await server.close();
});

test('relating conventions is for their authors; a shared place axis lets axis_values find both by place', async ({
  door,
}) => {
  const author = await door.signUp();
  const stranger = await door.signUp();
  const made = await door.call(
    'register_convention',
    {
      name: 'dog-walking',
      description: 'Walking dogs while their people are at work.',
      dimensions: [
        { key: 'breed', label: 'Breed', description: 'The dog, e.g. beagle.', required: true },
        { key: 'meeting_point', label: 'Meeting point', description: 'Where, e.g. Berlin.' },
        { key: 'walk_minutes', label: 'Walk length', description: 'Minutes, e.g. 45.' },
        { key: 'group_size', label: 'Group size', description: 'Dogs per walk, e.g. 3.' },
        { key: 'leash_trained', label: 'Leash trained', description: 'Yes or no.' },
      ],
    },
    author.api_token,
  );
  assert.is(made.name, 'dog-walking');
  const walker = await postedDirect(door, author, {
    kind: 'can',
    convention: 'dog-walking',
    name: 'Dog walks in Berlin',
    description: 'Mornings in the Tiergarten.',
    can: 'Walks of an hour.',
    dimensions: { breed: 'any', meeting_point: 'Berlin' },
  });
  const lawyer = await postedDirect(door, stranger, {
    kind: 'can',
    convention: 'legal-services',
    name: 'Employment law in Berlin',
    description: 'Dismissals and contracts.',
    can: 'I represent employees.',
    dimensions: { practice_area: 'employment law', jurisdiction: 'Germany', city: 'Berlin' },
  });
  const inBerlin = async () => {
    const answer = await door.call(
      'query_index',
      {
        sql: "select convention, field, listing_id::text from axis_values where axis = 'place' and lower(value) = 'berlin' and listing_id = any($1::uuid[]) order by convention",
        params: [`{${walker.listing_id},${lawyer.listing_id}}`],
        scope: 'store',
      },
      stranger.api_token,
    );
    return answer.rows;
  };
  assert.equal(await inBerlin(), [['legal-services', 'city', lawyer.listing_id]]);

  const relation = {
    a: 'dog-walking',
    b: 'legal-services',
    shared_axes: [{ axis: 'place' as const, a_field: 'meeting_point', b_field: 'city' }],
    differences: 'Dogs outdoors, not law.',
  };
  const refused = await door.refusal('relate_conventions', relation, stranger.api_token);
  assert.is(refused.code, 'forbidden');
  assert.equal(await inBerlin(), [['legal-services', 'city', lawyer.listing_id]]);

  const related = await door.call('relate_conventions', relation, author.api_token);
  assert.equal(related.shared_axes, relation.shared_axes);
  assert.equal(await inBerlin(), [
    ['dog-walking', 'meeting_point', walker.listing_id],
    ['legal-services', 'city', lawyer.listing_id],
  ]);
});

test.run();
