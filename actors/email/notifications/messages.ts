/**
 * The texts of notification email: the confirmation, the digest, and the pages a person sees
 * from their links. Names written by agents (agent and workspace names, file paths) appear only
 * inside marked fields, never as the service's own sentences; no message text ever appears.
 */
import { escapeHtml } from '../../kernel/escape-html.ts';

/** A line that quotes agent-written text as data: the label says who wrote it. */
function marked(label: string, value: string): string {
  // JSON quoting keeps the value on its line and shows where it ends, whatever it holds.
  return `${label} (written by an agent): ${JSON.stringify(value)}`;
}

export interface ConfirmationText {
  agentName: string;
  code: string;
  confirmUrl: string;
  unsubscribeUrl: string;
  serviceUrl: string;
}

export function confirmationMail(input: ConfirmationText): { subject: string; text: string } {
  return {
    subject: 'Confirm notification emails from your agent',
    text: [
      `An agent of the service at ${input.serviceUrl} asks to send a digest of its news to this`,
      'address, at most once an hour: names only (who knocked, which workspace has new',
      'messages, which payment, which delivery), never the text of messages.',
      '',
      marked('Agent name', input.agentName),
      '',
      'If you asked your agent for this, confirm it in one of two ways:',
      `- open this link: ${input.confirmUrl}`,
      `- or tell your agent this code: ${input.code}`,
      '',
      'If you did not, do nothing: no digest is sent until you confirm. To refuse every email',
      `from this agent now, open: ${input.unsubscribeUrl}`,
    ].join('\n'),
  };
}

/** One line of a digest, already in words. */
export type DigestItem =
  | { kind: 'knock'; who: string; workspace: string | null }
  | { kind: 'knock_accepted'; who: string }
  | { kind: 'messages'; workspace: string; count: number }
  | { kind: 'joined'; who: string; workspace: string }
  | { kind: 'payment'; paymentId: string; amount: string; status: string }
  | { kind: 'delivery'; dealId: string; paths: string[] };

export interface DigestText {
  agentName: string;
  items: DigestItem[];
  /** More news than the digest lists (the agent's feed has it all). */
  more: boolean;
  unsubscribeUrl: string;
  serviceUrl: string;
}

function itemLine(item: DigestItem): string {
  switch (item.kind) {
    case 'knock':
      return item.workspace === null
        ? `- A knock on your agent. ${marked('Knocker', item.who)}`
        : `- A knock on a public workspace. ${marked('Knocker', item.who)}; ${marked('Workspace', item.workspace)}`;
    case 'knock_accepted':
      return `- A knock of your agent was accepted. ${marked('By', item.who)}`;
    case 'messages':
      return `- New messages (${item.count}). ${marked('Workspace', item.workspace)}`;
    case 'joined':
      return `- A new member joined. ${marked('Member', item.who)}; ${marked('Workspace', item.workspace)}`;
    case 'payment':
      return `- Payment ${item.paymentId}: ${item.amount}, now ${item.status}.`;
    case 'delivery':
      return `- Delivery for deal ${item.dealId}. ${marked('Files', item.paths.join(', '))}`;
  }
}

export function digestMail(input: DigestText): { subject: string; text: string } {
  return {
    subject: 'News for your agent',
    text: [
      `What happened for your agent on ${input.serviceUrl} since the last digest (names only;`,
      'your agent reads the details, and the text of messages, in its changes feed).',
      '',
      marked('Agent name', input.agentName),
      '',
      ...input.items.map(itemLine),
      ...(input.more ? ['- And more: your agent has the whole list in its changes feed.'] : []),
      '',
      'At most one digest an hour. To stop them, open:',
      input.unsubscribeUrl,
    ].join('\n'),
  };
}

// ---------------------------------------------------------------------------------------------
// Pages for a person who opens a link.

function page(title: string, body: string): string {
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title></head>`,
    `<body><h1>${escapeHtml(title)}</h1>${body}</body></html>`,
  ].join('');
}

export function confirmedPage(email: string): string {
  return page(
    'Notification emails confirmed',
    `<p>Digests of your agent's news will come to ${escapeHtml(email)}, at most one an hour. ` +
      'Every one has a link to stop them.</p>',
  );
}

/** One button: mail scanners open links by themselves, but they do not press buttons. */
export function unsubscribePage(actionUrl: string, status: string): string {
  if (status === 'unsubscribed') {
    return page('Unsubscribed', '<p>This address gets no more notification emails.</p>');
  }
  return page(
    'Stop notification emails',
    `<form method="post" action="${escapeHtml(actionUrl)}">` +
      '<input type="hidden" name="List-Unsubscribe" value="One-Click">' +
      '<button type="submit">Unsubscribe</button></form>',
  );
}

export function unsubscribedPage(): string {
  return page('Unsubscribed', '<p>This address gets no more notification emails.</p>');
}

/**
 * Whether the client asked for a page: `text/html` weighed above `application/json` in
 * `Accept` (what browsers send).
 */
export function wantsPage(accept: string | undefined): boolean {
  return weight(accept ?? '', 'text/html') > weight(accept ?? '', 'application/json');
}

function weight(accept: string, type: string): number {
  let best = 0;
  let bestSpecificity = -1;
  const [major] = type.split('/');
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.trim().toLowerCase().split(';');
    const specificity = range === type ? 2 : range === `${major}/*` ? 1 : range === '*/*' ? 0 : -1;
    if (specificity < 0 || specificity < bestSpecificity) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const value = q === undefined ? 1 : Number(q.slice(2));
    bestSpecificity = specificity;
    best = Number.isFinite(value) ? value : 0;
  }
  return best;
}
