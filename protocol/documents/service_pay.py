#!/usr/bin/env python3
"""Pay a requested payment in USDC: sign and send the ERC-20 transfer, report it, wait for it.

Standard library only (Python 3.9+), for agents with nothing installed. Usage:

  SERVICE_PAY_PRIVATE_KEY=0x... python3 service_pay.py <pay_url | payment_id>
      [--base-url URL] [--rpc URL] [--token asvc_...] [--yes] [--wait SECONDS] [--poll SECONDS]
      [--submit-authorization]

With --submit-authorization the script is the payee's: the payer signed an x402 payment (an
EIP-3009 authorization, `payment.authorized` in the payee's feed) and no facilitator submitted it.
It reads the authorization from get_payment (with the payee's --token), checks that it pays this
payment exactly, and calls transferWithAuthorization on the token: the money moves from the payer
to pay_to, and SERVICE_PAY_PRIVATE_KEY (the payee's key, or any) pays only the gas.

The private key is read ONLY from SERVICE_PAY_PRIVATE_KEY (never an argument or a file). The
service token (--token or SERVICE_TOKEN) is the payer's: it reports the hash and reads the status.
The RPC is --rpc, else SERVICE_PAY_RPC_URL, else the instructions' rpc_url. --base-url defaults
to SERVICE_BASE_URL.

It reads GET <pay_url> (Accept: application/json): payment_id, status, chain_id, token_address,
pay_to, amount_units (an integer string), amount_usdc, memo, report_url, rpc_url (or null) and
reported_tx_hash (or null); sends transfer(pay_to, amount_units) on token_address; POSTs
{"tx_hash"} to report_url; then polls GET report_url without "/tx" (with the token; without
one, the pay_url) until the status is confirmed or final.

Exit codes:
  0  the payment is confirmed or final
  1  nothing sent: declined at the prompt, payment not payable, or the service unreachable
  2  bad usage or bad instructions (no key in the environment, a key given as an argument,
     an amount that is not an integer string, ...); nothing sent
  3  RPC error before sending (chain id mismatch, no gas, not enough USDC); nothing sent
  4  sent (or possibly sent) but not confirmed in time: do NOT send again; the hash is printed
  5  the transaction was mined but reverted: no USDC moved (only gas was spent)
"""
import argparse, hashlib, hmac, json, os, re, sys, time, urllib.error, urllib.parse, urllib.request
from decimal import Decimal

# --- Keccak-256 (Ethereum's hash; hashlib.sha3_256 pads differently and gives other digests) ---
_ROT = [[0, 36, 3, 41, 18], [1, 44, 10, 45, 2], [62, 6, 43, 15, 61], [28, 55, 25, 21, 56],
        [27, 20, 39, 8, 14]]  # rotation offsets r[x][y]
_M64 = (1 << 64) - 1


def _round_constants():
    out, r = [], 1  # the LFSR of the Keccak reference, instead of 24 magic numbers
    for _ in range(24):
        rc = 0
        for j in range(7):
            r = ((r << 1) ^ ((r >> 7) * 0x71)) % 256
            if r & 2:
                rc |= 1 << ((1 << j) - 1)
        out.append(rc)
    return out


_RC = _round_constants()


def _keccak_f(a):  # a[x + 5*y]: 25 lanes of 64 bits
    rol = lambda v, n: ((v << n) | (v >> (64 - n))) & _M64 if n else v
    row = lambda i, dx: (i + dx) % 5 + i - i % 5  # the lane dx to the right, in lane i's row
    for rc in _RC:
        c = [a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20] for x in range(5)]
        a = [a[i] ^ c[(i - 1) % 5] ^ rol(c[(i + 1) % 5], 1) for i in range(25)]  # theta
        b = [0] * 25
        for x in range(5):  # rho and pi
            for y in range(5):
                b[y + 5 * ((2 * x + 3 * y) % 5)] = rol(a[x + 5 * y], _ROT[x][y])
        a = [b[i] ^ (~b[row(i, 1)] & b[row(i, 2)]) for i in range(25)]  # chi
        a[0] ^= rc  # iota
    return a


def keccak256(data):
    rate = 136
    padded = bytearray(data) + b"\x01" + b"\x00" * ((-len(data) - 1) % rate)
    padded[-1] |= 0x80
    state = [0] * 25
    for off in range(0, len(padded), rate):
        for i in range(rate // 8):
            state[i] ^= int.from_bytes(padded[off + 8 * i : off + 8 * i + 8], "little")
        state = _keccak_f(state)
    return b"".join(lane.to_bytes(8, "little") for lane in state[:4])


# --- secp256k1, affine points as (x, y), None for infinity ---
P = 2**256 - 2**32 - 977
N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
G = (0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
     0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8)


def _add(p, q):
    if p is None or q is None:
        return p or q
    if p[0] == q[0] and (p[1] + q[1]) % P == 0:
        return None
    if p == q:
        m = 3 * p[0] * p[0] * pow(2 * p[1], -1, P)
    else:
        m = (q[1] - p[1]) * pow(q[0] - p[0], -1, P)
    x = (m * m - p[0] - q[0]) % P
    return (x, (m * (p[0] - x) - p[1]) % P)


def _mul(k, p=G):
    result = None
    while k:
        if k & 1:
            result = _add(result, p)
        p, k = _add(p, p), k >> 1
    return result


def checksum(address):  # EIP-55 mixed case, as wallets and explorers show it
    hexa = address.lower()[2:]
    digest = keccak256(hexa.encode()).hex()
    return "0x" + "".join(c.upper() if int(digest[i], 16) >= 8 else c for i, c in enumerate(hexa))


def address_of(key):
    x, y = _mul(key)
    return checksum("0x" + keccak256(x.to_bytes(32, "big") + y.to_bytes(32, "big"))[-20:].hex())


def sign(digest, key):
    """ECDSA with RFC 6979 deterministic k (HMAC-SHA256) and low s; returns (y_parity, r, s)."""
    hm = lambda k, v: hmac.new(k, v, hashlib.sha256).digest()
    z, x = int.from_bytes(digest, "big"), key.to_bytes(32, "big")
    h = (z % N).to_bytes(32, "big")
    k_, v = b"\x00" * 32, b"\x01" * 32
    k_ = hm(k_, v + b"\x00" + x + h); v = hm(k_, v)
    k_ = hm(k_, v + b"\x01" + x + h); v = hm(k_, v)
    while True:
        v = hm(k_, v)
        k = int.from_bytes(v, "big")
        if 1 <= k < N:
            rx, ry = _mul(k)
            r, s = rx % N, pow(k, -1, N) * (z + (rx % N) * key) % N
            if r and s:
                parity = ry & 1
                if s > N // 2:  # low s (EIP-2): the other s is valid for the negated point
                    s, parity = N - s, parity ^ 1
                return parity, r, s
        k_ = hm(k_, v + b"\x00"); v = hm(k_, v)


# --- RLP and the EIP-1559 (type 2) transaction ---
def _int_bytes(n):
    return n.to_bytes((n.bit_length() + 7) // 8, "big")  # minimal big-endian; 0 is empty


def rlp(item):
    if isinstance(item, int):
        item = _int_bytes(item)
    if isinstance(item, list):
        body = b"".join(rlp(i) for i in item)
        return _rlp_head(len(body), 0xC0) + body
    return item if len(item) == 1 and item[0] < 0x80 else _rlp_head(len(item), 0x80) + item


def _rlp_head(length, offset):
    if length < 56:
        return bytes([offset + length])
    return bytes([offset + 55 + len(_int_bytes(length))]) + _int_bytes(length)


def transfer_data(to, amount):  # ERC-20 transfer(address,uint256)
    return bytes.fromhex("a9059cbb") + bytes(12) + bytes.fromhex(to[2:]) + amount.to_bytes(32, "big")


TRANSFER_WITH_AUTHORIZATION = "transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"


def authorization_data(auth):  # EIP-3009, the `bytes signature` form; ABI: 6 words, offset, bytes
    word = lambda n: n.to_bytes(32, "big")
    address = lambda a: bytes(12) + bytes.fromhex(a[2:])
    signature = bytes.fromhex(auth["signature"][2:])
    padded = signature + bytes(-len(signature) % 32)
    return (keccak256(TRANSFER_WITH_AUTHORIZATION.encode())[:4] + address(auth["from"]) + address(auth["to"])
            + word(int(auth["value"])) + word(int(auth["valid_after"])) + word(int(auth["valid_before"]))
            + bytes.fromhex(auth["nonce"][2:]) + word(7 * 32) + word(len(signature)) + padded)


def read_authorization(answer, pay_to, units):
    """The signed x402 payment kept for this payment, checked to pay exactly it (else exit 2)."""
    auth = answer.get("authorization") if isinstance(answer, dict) else None
    if not isinstance(auth, dict):
        fail(1, "no signed x402 payment is kept for this payment (get_payment's authorization is null)")
    for field in ("from", "to"):
        if not HEX_ADDRESS.match(str(auth.get(field))):
            fail(2, f"authorization.{field} is not an address: {auth.get(field)!r}")
    for field in ("value", "valid_after", "valid_before"):
        if not re.fullmatch(r"[0-9]{1,78}", str(auth.get(field))):
            fail(2, f"authorization.{field} is not an integer string: {auth.get(field)!r}")
    if not re.fullmatch(r"0x[0-9a-fA-F]{64}", str(auth.get("nonce"))):
        fail(2, "authorization.nonce is not 32 bytes of hex")
    if not re.fullmatch(r"0x[0-9a-fA-F]{130}", str(auth.get("signature"))):
        fail(2, "authorization.signature is not 65 bytes of hex")
    if auth["to"].lower() != pay_to.lower() or int(auth["value"]) != units:
        fail(2, f"the authorization pays {auth['value']} to {auth['to']}, not this payment's {units}"
                f" to {pay_to}: nothing sent")
    if int(auth["valid_before"]) <= time.time() + 6:
        fail(1, f"the authorization expired (valid before {auth['valid_before']}): nothing sent")
    return auth


def sign_eip1559(key, chain_id, nonce, max_priority_fee, max_fee, gas, to, value, data):
    """The raw signed transaction: 0x02 || rlp([... fields, y_parity, r, s])."""
    fields = [chain_id, nonce, max_priority_fee, max_fee, gas, bytes.fromhex(to[2:]), value, data, []]
    parity, r, s = sign(keccak256(b"\x02" + rlp(fields)), key)
    return b"\x02" + rlp(fields + [parity, r, s])


# --- the service and the RPC over HTTP ---
class RpcError(Exception):
    def __init__(self, message, answered=False):
        super().__init__(message)
        self.answered = answered  # the node answered with an error: it did not take the transaction


def http_json(url, body=None, token=None, timeout=30):
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = None if body is None else json.dumps(body).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=timeout) as answer:
        return json.loads(answer.read(10_000_000))  # bounded: nothing here needs more


def rpc(url, method, *params):
    try:
        answer = http_json(url, {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
    except (OSError, ValueError) as error:
        raise RpcError(f"{method}: {error}")
    if isinstance(answer, dict) and "error" in answer:
        raise RpcError(f"{method}: {answer['error']}", True)
    if not isinstance(answer, dict) or "result" not in answer:  # nonsense: may or may not have acted
        raise RpcError(f"{method}: not a JSON-RPC answer: {str(answer)[:200]}")
    return answer["result"]


def fail(code, message):
    print(message, file=sys.stderr)
    sys.exit(code)


HEX_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
KNOWN = ("requested", "seen", "confirmed", "final", "expired")


def read_instructions(ins):
    """Checks the fields this script relies on; anything odd stops it before money moves (exit 2)."""
    if not isinstance(ins, dict):
        fail(2, "the pay instructions are not a JSON object")
    units, chain = ins.get("amount_units"), ins.get("chain_id")
    if not isinstance(units, str) or not re.fullmatch(r"[1-9][0-9]{0,29}", units):
        fail(2, f"amount_units must be a positive integer string, got {units!r}; nothing sent")
    if isinstance(chain, str) and chain.isdigit():
        chain = int(chain)
    if not isinstance(chain, int) or isinstance(chain, bool) or chain <= 0:
        fail(2, f"chain_id is not a chain id: {chain!r}")
    for field in ("pay_to", "token_address"):
        if not HEX_ADDRESS.match(str(ins.get(field))):
            fail(2, f"{field} is not an address: {ins.get(field)!r}")
    usdc = str(ins.get("amount_usdc"))
    if not re.fullmatch(r"[0-9]+(\.[0-9]{1,6})?", usdc) or Decimal(usdc) * 10**6 != int(units):
        fail(2, f"amount_usdc {usdc!r} does not match amount_units {units}; nothing sent")
    if not isinstance(ins.get("report_url"), str):
        fail(2, "report_url is missing")
    return chain, int(units)


def state_of(answer):
    status = answer.get("status") if isinstance(answer, dict) else None
    if status not in KNOWN:
        return "unknown"  # never "failed": an unknown state may still turn out paid
    evidence = answer.get("evidence") if isinstance(answer.get("evidence"), dict) else answer
    confirmations = evidence.get("confirmations")
    return f"{status} ({confirmations} confirmations)" if confirmations is not None else status


def confirmed(question):
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:  # no one at the keyboard: only --yes sends
        return False


def main(argv):
    key_like = lambda a: re.fullmatch(r"(0x)?[0-9a-fA-F]{64}", a) or a.startswith(("--key", "--priv"))
    if any(key_like(a) for a in argv):  # argv is visible to every process on the machine
        fail(2, "refused: never pass a private key as an argument; set SERVICE_PAY_PRIVATE_KEY instead")
    parser = argparse.ArgumentParser(description="Pay a requested payment in USDC.")
    parser.add_argument("payment", help="the pay_url, or a payment_id with --base-url")
    parser.add_argument("--base-url", default=os.environ.get("SERVICE_BASE_URL"))
    parser.add_argument("--rpc", default=os.environ.get("SERVICE_PAY_RPC_URL"))
    parser.add_argument("--token", default=os.environ.get("SERVICE_TOKEN"))
    parser.add_argument("--yes", action="store_true", help="send without asking")
    parser.add_argument("--wait", type=float, default=600, help="seconds to wait for confirmation")
    parser.add_argument("--poll", type=float, default=5, help="seconds between status checks")
    parser.add_argument("--submit-authorization", action="store_true",
                        help="as the payee: submit the payer's signed x402 payment (the key pays gas)")
    args = parser.parse_args(argv)
    raw_key = os.environ.get("SERVICE_PAY_PRIVATE_KEY", "")
    if not re.fullmatch(r"(0x)?[0-9a-fA-F]{64}", raw_key) or not 0 < int(raw_key[-64:], 16) < N:
        fail(2, "set SERVICE_PAY_PRIVATE_KEY to the payer's private key (0x + 64 hex digits)")
    key = int(raw_key[-64:], 16)

    pay_url = args.payment
    if not pay_url.startswith(("http://", "https://")):
        if not args.base_url or not re.fullmatch(r"[0-9a-fA-F-]{36}", pay_url):
            fail(2, "give the pay_url, or a payment_id together with --base-url")
        pay_url = f"{args.base_url.rstrip('/')}/pay/{pay_url}"
    try:
        ins = http_json(pay_url)
    except (OSError, ValueError) as error:
        fail(1, f"could not read the pay instructions at {pay_url}: {error}")
    chain_id, units = read_instructions(ins)
    report_url = urllib.parse.urljoin(pay_url, ins["report_url"])
    status_url = re.sub(r"/tx/?$", "", report_url)
    if ins.get("status") != "requested":
        fail(0 if ins.get("status") in ("confirmed", "final") else 1,
             f"payment {ins.get('payment_id')} is {state_of(ins)}: nothing to send")
    if ins.get("reported_tx_hash"):
        fail(1, f"a transaction was already reported for this payment: {ins['reported_tx_hash']};"
                " check it on a block explorer before paying again")
    rpc_url = args.rpc or ins.get("rpc_url")
    if not rpc_url:
        fail(2, "no RPC: give --rpc URL or set SERVICE_PAY_RPC_URL")
    sender, pay_to, token = address_of(key), ins["pay_to"], ins["token_address"]
    # json.dumps escapes control and non-ASCII characters: the memo cannot redraw the terminal
    print(f"payment {ins.get('payment_id')}, memo {json.dumps(ins.get('memo'))} (the payee's words)")
    payer = sender  # whose USDC moves
    if args.submit_authorization:  # the payee submits what the payer signed; this key pays gas only
        if not args.token or not isinstance(ins.get("payment_url"), str):
            fail(2, "--submit-authorization reads get_payment: give the payee's --token (or SERVICE_TOKEN)")
        try:
            auth = read_authorization(http_json(ins["payment_url"], token=args.token), pay_to, units)
        except (OSError, ValueError) as error:
            fail(1, f"could not read the payment at {ins['payment_url']}: {error}")
        payer = auth["from"]
        data = authorization_data(auth)
        print(f"submit the payer's signed authorization: {ins['amount_usdc']} USDC ({units} units of token {token})")
        print(f"  from {payer} (signed it)\n  to   {pay_to}\n  gas paid by {sender}, on chain {chain_id} via {rpc_url}")
    else:
        print(f"send {ins['amount_usdc']} USDC ({units} units of token {token})")
        print(f"  from {sender}\n  to   {pay_to}\n  on chain {chain_id} via {rpc_url}")
        data = transfer_data(pay_to, units)
    try:  # everything the transaction needs, before anything is sent
        node_chain = int(rpc(rpc_url, "eth_chainId"), 16)
        if node_chain != chain_id:
            fail(3, f"the RPC is on chain {node_chain}, the payment on chain {chain_id}: nothing sent")
        balance_call = {"to": token, "data": "0x70a08231" + "0" * 24 + payer[2:].lower()}
        if int(rpc(rpc_url, "eth_call", balance_call, "latest"), 16) < units:
            fail(3, f"{payer} holds less than {ins['amount_usdc']} USDC: nothing sent")
        nonce = int(rpc(rpc_url, "eth_getTransactionCount", sender, "pending"), 16)
        base_fee = int(rpc(rpc_url, "eth_getBlockByNumber", "latest", False)["baseFeePerGas"], 16)
        try:
            tip = int(rpc(rpc_url, "eth_maxPriorityFeePerGas"), 16)
        except RpcError:  # older nodes: the gas price above the base fee
            tip = max(int(rpc(rpc_url, "eth_gasPrice"), 16) - base_fee, 1)
        call = {"from": sender, "to": token, "data": "0x" + data.hex()}
        gas = int(rpc(rpc_url, "eth_estimateGas", call), 16) * 13 // 10  # a 30% margin
        max_fee = 2 * base_fee + tip  # stays valid through a few full blocks
        if int(rpc(rpc_url, "eth_getBalance", sender, "pending"), 16) < gas * max_fee:
            fail(3, f"{sender} has not enough ETH for gas ({gas * max_fee} wei): nothing sent")
    except (RpcError, KeyError, TypeError, ValueError) as error:
        fail(3, f"RPC error before sending, nothing sent: {error}")
    if not args.yes and not confirmed("send it? [y/N] "):
        fail(1, "not sent")

    raw = sign_eip1559(key, chain_id, nonce, tip, max_fee, gas, token, 0, data)
    tx_hash = "0x" + keccak256(raw).hex()
    print(f"transaction {tx_hash}", flush=True)
    try:
        rpc(rpc_url, "eth_sendRawTransaction", "0x" + raw.hex())
    except RpcError as error:
        if error.answered:
            fail(3, f"the node refused the transaction, nothing sent: {error}")
        fail(4, f"sending may have worked ({error}); do NOT send again before checking {tx_hash}")
    return wait_for(args, tx_hash, rpc_url, report_url, status_url, pay_url)


def report(args, report_url, tx_hash):
    if not args.token:
        print("no service token: not reported; the service's watcher may still find the transfer")
        return
    try:
        state = state_of(http_json(report_url, {"tx_hash": tx_hash}, args.token))
    except urllib.error.HTTPError as error:
        state = f"refused ({error.code}): {error.read().decode(errors='replace')[:300]}"
    except (OSError, ValueError) as error:
        state = f"unknown (not delivered: {error})"
    print(f"reported: {state}", flush=True)


def wait_for(args, tx_hash, rpc_url, report_url, status_url, pay_url):
    """Reports the hash (again once mined) and prints each state until confirmed or out of time."""
    report(args, report_url, tx_hash)
    reported_mined, last, deadline = False, None, time.monotonic() + args.wait
    while True:
        try:
            receipt = rpc(rpc_url, "eth_getTransactionReceipt", tx_hash)
        except RpcError:
            receipt = None
        if isinstance(receipt, dict) and receipt.get("status") == "0x0":
            fail(5, f"transaction {tx_hash} reverted: no USDC moved")
        try:  # the payer's token reads the full payment; without one, the public instructions
            answer = http_json(status_url, token=args.token) if args.token else http_json(pay_url)
            state = state_of(answer)
        except (OSError, ValueError):
            state = "unknown"
        if state != last:
            print(f"status: {state}", flush=True)
            last = state
        if state.startswith(("confirmed", "final")):
            return 0
        if receipt and state.startswith("requested") and not reported_mined:
            report(args, report_url, tx_hash)  # mined now: so the service checks it at once
            reported_mined = True
        if time.monotonic() > deadline or state == "expired":
            fail(4, f"not confirmed yet ({state}); do NOT send again. Transaction: {tx_hash}")
        time.sleep(args.poll)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
