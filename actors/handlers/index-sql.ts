import { runIndexQuery } from '../index-queries.ts';
import type { Handler } from './types.ts';

export const queryIndex: Handler<'query_index'> = ({ services, principal }, input) =>
  runIndexQuery(services, principal, input);
