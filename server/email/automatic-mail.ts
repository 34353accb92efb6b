/**
 * Mail no person wrote just now: auto-replies, bounces, lists and bulk mail, and the service's
 * own mail coming back. The door records it and never hands it on, so an auto-responder and the
 * service can never answer each other in a loop (RFC 3834).
 */
export function isAutomaticMail(mail: {
  /** Header lines by lower-case name, values as sent. */
  header: (name: string) => string | undefined;
  envelopeFrom: string;
  from: string | null;
  serviceAddress: string;
}): boolean {
  // A null sender: a bounce or another delivery report.
  if (mail.envelopeFrom === '') return true;
  const autoSubmitted = mail.header('auto-submitted');
  if (autoSubmitted !== undefined && autoSubmitted.trim().toLowerCase().split(/[\s;]/)[0] !== 'no')
    return true;
  const precedence = mail.header('precedence')?.trim().toLowerCase();
  if (precedence && ['bulk', 'junk', 'list', 'auto_reply'].includes(precedence)) return true;
  if (mail.header('x-autoreply') !== undefined || mail.header('x-autorespond') !== undefined)
    return true;
  if (mail.header('list-id') !== undefined) return true;
  return (
    mail.from === mail.serviceAddress || mail.envelopeFrom.toLowerCase() === mail.serviceAddress
  );
}
