import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newText, plainSubject } from '../../server/email/new-text.ts';

const test = suite('the new text of a reply, as mail programs quote');

/** Lines joined with CRLF, as they come off the wire. */
const body = (...lines: string[]) => lines.join('\r\n');

test('Gmail: the "On ... wrote:" line and the quote under it are dropped', () => {
  const text = body(
    'agent_id: 7d1c2a9e-2f0b-4b8e-9d7e-0a1b2c3d4e5f',
    '',
    'On Tue, Nov 25, 2026 at 2:04 PM Agent Service <invite-k3y@agents.example> wrote:',
    '',
    '> Alice (an agent) invites you to the workspace "Garden".',
    '> Reply to this email to join.',
    '>',
  );
  assert.is(newText(text), 'agent_id: 7d1c2a9e-2f0b-4b8e-9d7e-0a1b2c3d4e5f');
});

test('Gmail wraps a long "On ... wrote:" over two lines', () => {
  const text = body(
    '482913',
    '',
    'On Tue, Nov 25, 2026 at 2:04 PM Agent Service Notifications <',
    'service@agents.example> wrote:',
    '',
    '> Your code is 000000. Ignore this mail if you did not sign up.',
  );
  assert.is(newText(text), '482913');
});

test('Outlook: the line of underscores and the From/Sent/To/Subject block end the new text', () => {
  const text = body(
    'workspace_id: 0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
    'path: notes/today.md',
    '',
    '________________________________',
    'From: Agent Service <service@agents.example>',
    'Sent: Tuesday, November 25, 2026 2:04 PM',
    'To: Person <person@people.example.com>',
    'Subject: Re: save_file',
    '',
    'invalid_input: path is required',
  );
  assert.is(
    newText(text),
    'workspace_id: 0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b\npath: notes/today.md',
  );
});

test('Outlook: "-----Original Message-----" and a header block without the rule', () => {
  assert.is(
    newText(
      body(
        'yes, carry it out',
        '',
        '-----Original Message-----',
        'From: Agent Service <service@agents.example> ',
        'Sent: Tuesday, November 25, 2026 2:04 PM',
        'To: person@people.example.com',
        'Subject: Confirm agree',
        '',
        'Reply to this email to carry out: agree',
      ),
    ),
    'yes, carry it out',
  );
  assert.is(
    newText(
      body(
        'name: field-bot',
        '',
        'From: Agent Service <service@agents.example>',
        'Date: Tuesday, 25 November 2026 at 14:04',
        'To: Person <person@people.example.com>',
        'Subject: sign-up',
        'Your code is 111111',
      ),
    ),
    'name: field-bot',
  );
});

test('Apple Mail: "Sent from my iPhone" and the quoted "On ..., at ..., ... wrote:"', () => {
  const text = body(
    'confirm',
    '',
    'Sent from my iPhone',
    '',
    '> On 25 Nov 2026, at 14:04, Agent Service <service@agents.example> wrote:',
    '> ',
    '> Reply to this message to confirm: deliver',
  );
  assert.is(newText(text), 'confirm');
  assert.is(
    newText(
      body(
        'name: mac-bot',
        '',
        'On 25 Nov 2026, at 14:04, Agent Service <service@agents.example> wrote:',
        '',
        'Your code is 222222',
      ),
    ),
    'name: mac-bot',
    'Apple Mail on a Mac quotes the history without ">"',
  );
});

test('other languages and Thunderbird', () => {
  for (const opener of [
    'On 25/11/2026 14:04, Agent Service wrote:',
    'Am 25.11.2026 um 14:04 schrieb Agent Service <service@agents.example>:',
    'Le mar. 25 nov. 2026 à 14:04, Agent Service <service@agents.example> a écrit :',
    'El mar, 25 nov 2026 a las 14:04, Agent Service (<service@agents.example>) escribió:',
    '---------- Forwarded message ---------',
  ])
    assert.is(newText(body('whoami please', '', opener, 'old text')), 'whoami please', opener);
});

test('plain ">" quoting interleaved with answers keeps only the unquoted lines', () => {
  const text = body(
    '> Which workspace?',
    'workspace_id: 0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
    '>> And the path?',
    '> > nested quote',
    'path: notes/a.txt',
  );
  assert.is(newText(text), 'workspace_id: 0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b\npath: notes/a.txt');
});

test('a signature after "-- " (or "--") is dropped, and mobile one-line signatures', () => {
  assert.is(
    newText(body('name: sig-bot', '', '-- ', 'Alice Person', 'Example Corp | +1 555 0100')),
    'name: sig-bot',
  );
  assert.is(newText(body('name: sig-bot', '--', 'Alice')), 'name: sig-bot');
  assert.is(newText(body('whoami', '', 'Get Outlook for iOS')), 'whoami');
});

test('YAML is kept whole: folded scalars, lists, indentation, "---" and a "key: >" line', () => {
  const yaml = body(
    'workspace_id: 0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
    'text: >',
    '  a folded line',
    '  > indented, not a quote',
    'from: 2026-11-01',
    'to: 2026-11-30',
    'subject: lower-case keys are YAML, not a header block',
    'tags:',
    '  - one',
    '  - two',
    '---',
  );
  assert.is(newText(yaml), yaml.replace(/\r\n/g, '\n'));
});

test('an empty body, and one that is only quote, give an empty new text', () => {
  assert.is(newText(''), '');
  assert.is(newText(body('> only', '> quoted')), '');
  assert.is(newText('\r\n\r\n   \r\n'), '');
});

test('subjects lose their reply and forward prefixes, however many, in any case', () => {
  for (const [subject, plain] of [
    ['Re: whoami', 'whoami'],
    ['RE: Re: re:whoami', 'whoami'],
    ['Fwd: FW: create_workspace', 'create_workspace'],
    ['AW: WG: agree', 'agree'],
    ['Re[2]: list_invites', 'list_invites'],
    ['SV: VS: changes', 'changes'],
    ['  sign-up  ', 'sign-up'],
    ['Re: ', ''],
    ['Regarding: whoami', 'Regarding: whoami'],
    ['whoami: Re: x', 'whoami: Re: x'],
  ] as const)
    assert.is(plainSubject(subject), plain, subject);
});

test.run();
