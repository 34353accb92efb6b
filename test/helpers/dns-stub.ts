import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import * as packet from 'dns-packet';
import { onTestsEnd } from './resources.ts';

/** What the stub answers: by lower-case name, then record type, the records' values. */
export interface DnsRecords {
  [name: string]: { TXT?: string[]; A?: string[]; MX?: { exchange: string; priority: number }[] };
}

export interface DnsStub {
  port: number;
  /** What MAIL_DNS_SERVERS names to ask it. */
  server: string;
  records: DnsRecords;
  /** Questions it was asked, as `TYPE name`. */
  questions: string[];
  /** `answer`: from the table (NXDOMAIN for a name it has not); `silent`: never answers. */
  mode: 'answer' | 'silent';
  close(): Promise<void>;
}

/** A TXT value as DNS carries it: strings of at most 255 bytes each (a DKIM key is longer). */
function txtStrings(value: string): Buffer[] {
  const bytes = Buffer.from(value);
  const parts: Buffer[] = [];
  for (let start = 0; start < bytes.length; start += 255)
    parts.push(bytes.subarray(start, start + 255));
  return parts.length > 0 ? parts : [Buffer.alloc(0)];
}

/**
 * A local DNS server over UDP on 127.0.0.1 (dns-packet), so that SPF, DKIM and DMARC checks run
 * offline against records the test chooses; in `silent` mode it takes questions and never
 * answers (a look-up must then time out as `temperror`).
 */
export async function startDnsStub(records: DnsRecords = {}): Promise<DnsStub> {
  const socket = createSocket('udp4');
  const stub: DnsStub = {
    port: 0,
    server: '',
    records,
    questions: [],
    mode: 'answer',
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
  socket.on('message', (message, remote) => {
    let query: packet.Packet;
    try {
      query = packet.decode(message);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    if (!question) return;
    stub.questions.push(`${question.type} ${question.name}`);
    if (stub.mode === 'silent') return;
    const entry = stub.records[question.name.toLowerCase()];
    const answers: packet.Answer[] = [];
    if (question.type === 'TXT')
      for (const value of entry?.TXT ?? [])
        answers.push({ type: 'TXT', name: question.name, ttl: 60, data: txtStrings(value) });
    if (question.type === 'A')
      for (const value of entry?.A ?? [])
        answers.push({ type: 'A', name: question.name, ttl: 60, data: value });
    if (question.type === 'MX')
      for (const value of entry?.MX ?? [])
        answers.push({ type: 'MX', name: question.name, ttl: 60, data: value });
    const reply = packet.encode({
      id: query.id,
      type: 'response',
      // Authoritative; NXDOMAIN (rcode 3) for a name the table does not hold.
      flags:
        packet.AUTHORITATIVE_ANSWER |
        packet.RECURSION_DESIRED |
        packet.RECURSION_AVAILABLE |
        (entry ? 0 : 3),
      questions: query.questions,
      answers,
    });
    socket.send(reply, remote.port, remote.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  stub.port = (socket.address() as AddressInfo).port;
  stub.server = `127.0.0.1:${stub.port}`;
  let closed = false;
  const close = stub.close;
  stub.close = async () => {
    if (closed) return;
    closed = true;
    await close();
  };
  onTestsEnd(stub.close);
  return stub;
}
