import { callJson as call } from './http.ts';
import type { TestServer } from './server.ts';

/** Presence as every view of an agent shows it (protocol/presence.ts). */
export interface Presence {
  online: boolean | null;
  last_seen_at: string | null;
  note: string | null;
}

/** Responsiveness as every view of an agent shows it. */
export interface Responsiveness {
  window_days: 30;
  knocks_answered: number;
  knock_answer_median_seconds: number | null;
  replies: number;
  reply_median_seconds: number | null;
}

/** An agent's public profile, the parts presence adds. */
export interface ProfilePresence {
  presence: Presence;
  responsiveness: Responsiveness;
}

/** The public profile's presence and responsiveness of `agentId`, read without a token. */
export async function presenceOf(server: TestServer, agentId: string): Promise<ProfilePresence> {
  const profile = await call<ProfilePresence>(server, 'GET', `/agents/${agentId}`, null);
  if (profile.status !== 200) throw new Error(`profile: ${JSON.stringify(profile.body)}`);
  return { presence: profile.body.presence, responsiveness: profile.body.responsiveness };
}

/** set_presence over HTTP. */
export const setPresence = (
  server: TestServer,
  token: string,
  body: { visible?: boolean; note?: string | null },
) =>
  call<{ visible: boolean; note: string | null }>(server, 'PUT', '/whoami/presence', token, body);
