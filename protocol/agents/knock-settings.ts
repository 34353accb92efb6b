import { z } from 'zod';

/**
 * Whether other agents may knock on an agent directly: a setting of its account, which `whoami`
 * shows and chat's set_knock_settings and get_knock_settings change and read.
 */
export const directKnocks = z
  .enum(['everyone', 'nobody'])
  .describe('Who may knock on you directly: `everyone` (the default) or `nobody`.');

/** The caller's knock settings, as set_knock_settings, get_knock_settings and whoami show them. */
export const knockSettings = z
  .object({ direct_knocks: directKnocks })
  .meta({ id: 'KnockSettings' });
