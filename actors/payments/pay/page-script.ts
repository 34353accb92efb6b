/**
 * The pay page's one script, as text: it is served inline and allowed by its sha256 in the
 * page's Content-Security-Policy, so it is a constant. It reads its data from the page's JSON
 * block (`#pay-data`, which holds no agent-written text), never builds HTML from text
 * (textContent only), and never evaluates strings.
 *
 * The browser-wallet button speaks EIP-1193 to `window.ethereum`: eth_requestAccounts, the chain
 * (wallet_switchEthereumChain when the wallet is elsewhere, then checked again: never send on
 * another chain), then eth_sendTransaction of the token's transfer(pay_to, amount_units), encoded
 * here by hand (selector a9059cbb, the address and the amount each as a 32-byte word). The hash
 * is POSTed as {tx_hash} to the report URL, and the page polls `GET /pay/<id>` (JSON) for the
 * status. Once a hash exists the button stays disabled: paying twice is the mistake to prevent.
 * A status the page cannot read shows as "checking", never as failed.
 *
 * The sign button (shown when the token's EIP-712 domain is known) pays by x402 instead: the
 * wallet signs an EIP-3009 authorization with eth_signTypedData_v4 (no gas, no transaction), for
 * exactly the amount to pay_to, valid for an hour at most and never past the payment's expiry,
 * with a random nonce; the page sends it to `POST /pay/<id>` in PAYMENT-SIGNATURE, which checks
 * it and has the facilitator or the payee submit it. A wallet without eth_signTypedData_v4 is
 * told to use the other button.
 */
export const PAY_PAGE_SCRIPT = `(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('pay-data').textContent);
  var button = document.getElementById('wallet-pay');
  var signButton = document.getElementById('wallet-sign');
  var note = document.getElementById('wallet-note');
  var statusLine = document.getElementById('status');
  var txLine = document.getElementById('tx');
  var LABELS = {
    requested: 'requested: waiting for the transfer',
    seen: 'seen in a block: waiting for confirmations',
    confirmed: 'confirmed: becoming final',
    final: 'final: paid',
    expired: 'expired: do not pay; a transfer now is not credited'
  };
  var POLL_MS = 4000;
  var sentHash = null;
  var status = data.status;
  var pollTimer = null;

  function say(text) { note.textContent = text; }

  function showStatus(next) {
    var known = Object.prototype.hasOwnProperty.call(LABELS, next);
    if (known) status = next;
    var text;
    if (!known) text = 'checking';
    else if (next === 'requested' && sentHash) text = 'checking: transaction sent, waiting for it to be found on-chain';
    else text = LABELS[next];
    statusLine.textContent = text;
    statusLine.setAttribute('data-status', known ? next : 'checking');
    if (known && next !== 'requested') {
      button.disabled = true;
      if (signButton) signButton.disabled = true;
    }
  }

  function setButtons(disabled) {
    button.disabled = disabled;
    if (signButton) signButton.disabled = disabled;
  }

  function pad64(hex) { return '0'.repeat(64 - hex.length) + hex; }

  function transferData(to, units) {
    return '0xa9059cbb' + pad64(to.slice(2).toLowerCase()) + pad64(BigInt(units).toString(16));
  }

  function schedulePoll(ms) {
    if (pollTimer !== null) clearTimeout(pollTimer);
    pollTimer = setTimeout(poll, ms);
  }

  async function poll() {
    pollTimer = null;
    try {
      var response = await fetch(data.poll_url, { headers: { accept: 'application/json' }, cache: 'no-store' });
      if (!response.ok) throw new Error('status ' + response.status);
      var body = await response.json();
      showStatus(body && typeof body.status === 'string' ? body.status : 'unknown');
    } catch (error) {
      showStatus('unknown');
    }
    if (status !== 'final' && status !== 'expired') schedulePoll(POLL_MS);
  }

  async function report(hash) {
    for (var attempt = 1; attempt <= 5; attempt++) {
      try {
        var response = await fetch(data.report_url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ tx_hash: hash })
        });
        if (response.ok) {
          say('Transaction reported; the service checks it on-chain. Do not pay again.');
          return;
        }
        if (response.status < 500 && response.status !== 429) {
          var problem = await response.json().catch(function () { return {}; });
          say('The service did not accept the report (' + (problem.code || response.status) + '): ' +
            (problem.detail || problem.title || '') + ' Do not pay again; keep the transaction hash.');
          return;
        }
      } catch (error) { /* a network error: try again below */ }
      await new Promise(function (resolve) { setTimeout(resolve, 2000 * attempt); });
    }
    say('Could not reach the service to report the transaction. Do not pay again: keep the hash and report it later.');
  }

  function noWallet() {
    say('No browser wallet found. Scan the QR code or open the link with a wallet app' +
      (data.has_deposit_address ? ', or send USDC to the deposit address from any wallet or exchange.' : '.'));
  }

  /** The wallet's account, on the payment's chain (asked to switch when elsewhere). */
  async function accountOn(eth) {
    say('Asking your wallet for an account…');
    var accounts = await eth.request({ method: 'eth_requestAccounts' });
    var from = accounts && accounts[0];
    if (typeof from !== 'string') throw new Error('the wallet gave no account');
    var chainHex = '0x' + Number(data.chain_id).toString(16);
    var current = await eth.request({ method: 'eth_chainId' });
    if (String(current).toLowerCase() !== chainHex) {
      say('Asking your wallet to switch to ' + data.chain_name + '…');
      await eth.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: chainHex }] });
      current = await eth.request({ method: 'eth_chainId' });
      if (String(current).toLowerCase() !== chainHex) throw new Error('the wallet is not on ' + data.chain_name);
    }
    return from;
  }

  function randomNonce() {
    var bytes = new Uint8Array(32);
    crypto.getRandomValues(bytes);
    var hex = '0x';
    for (var i = 0; i < bytes.length; i++) hex += ('0' + bytes[i].toString(16)).slice(-2);
    return hex;
  }

  async function signWithWallet() {
    var eth = window.ethereum;
    if (!eth || typeof eth.request !== 'function') { noWallet(); return; }
    setButtons(true);
    var answer;
    try {
      var from = await accountOn(eth);
      var now = Math.floor(Date.now() / 1000);
      var validBefore = Math.min(data.x402.valid_before_max, now + 3600);
      var message = {
        from: from, to: data.pay_to, value: data.amount_units,
        validAfter: String(now - 60), validBefore: String(validBefore), nonce: randomNonce()
      };
      var typed = {
        types: {
          EIP712Domain: [
            { name: 'name', type: 'string' }, { name: 'version', type: 'string' },
            { name: 'chainId', type: 'uint256' }, { name: 'verifyingContract', type: 'address' }
          ],
          TransferWithAuthorization: [
            { name: 'from', type: 'address' }, { name: 'to', type: 'address' },
            { name: 'value', type: 'uint256' }, { name: 'validAfter', type: 'uint256' },
            { name: 'validBefore', type: 'uint256' }, { name: 'nonce', type: 'bytes32' }
          ]
        },
        primaryType: 'TransferWithAuthorization',
        domain: { name: data.x402.name, version: data.x402.version, chainId: data.chain_id, verifyingContract: data.token_address },
        message: message
      };
      say('Sign the authorization in your wallet: no gas, and it moves exactly this amount to the payee, once…');
      var signature = await eth.request({ method: 'eth_signTypedData_v4', params: [from, JSON.stringify(typed)] });
      var payload = {
        x402Version: 2,
        accepted: {
          scheme: 'exact', network: 'eip155:' + data.chain_id, amount: data.amount_units,
          asset: data.token_address, payTo: data.pay_to, maxTimeoutSeconds: validBefore - now,
          extra: { name: data.x402.name, version: data.x402.version }
        },
        payload: { signature: String(signature), authorization: message }
      };
      say('Sending the signed payment to the service…');
      answer = await fetch(data.poll_url, {
        method: 'POST',
        headers: { 'payment-signature': btoa(JSON.stringify(payload)), accept: 'application/json' },
        cache: 'no-store'
      });
    } catch (error) {
      var code = error && error.code;
      if (code === 4001) say('You declined in your wallet; nothing was signed.');
      else if (code === 4200 || code === -32601 || code === 4100) say('Your wallet cannot sign typed data (eth_signTypedData_v4): use “Pay with browser wallet” instead.');
      else if (code === 4902) say('Your wallet does not know ' + data.chain_name + ': add that network to it, then try again.');
      else say('The wallet answered: ' + ((error && error.message) || String(error)) + '. Nothing was paid.');
      setButtons(false);
      return;
    }
    var body = await answer.json().catch(function () { return {}; });
    if (answer.status === 200 || answer.status === 202) {
      sentHash = 'signed';
      txLine.textContent = answer.status === 200
        ? 'Paid by your signed authorization.'
        : 'Signed authorization taken; ' + (body.settlement === 'facilitator'
          ? 'the service’s facilitator submits it.' : 'the payee submits it.');
      say('Do not pay again: the payment turns seen once the transfer is on-chain.');
      showStatus(status);
      schedulePoll(0);
      return;
    }
    say('The service did not take the signed payment: ' + String(body.error || body.detail || answer.status) + ' Nothing was paid.');
    setButtons(false);
  }

  async function payWithWallet() {
    var eth = window.ethereum;
    if (!eth || typeof eth.request !== 'function') { noWallet(); return; }
    setButtons(true);
    try {
      var from = await accountOn(eth);
      say('Confirm the transfer in your wallet…');
      var hash = await eth.request({
        method: 'eth_sendTransaction',
        params: [{ from: from, to: data.token_address, data: transferData(data.pay_to, data.amount_units), value: '0x0' }]
      });
      sentHash = String(hash);
    } catch (error) {
      var code = error && error.code;
      if (code === 4001) say('You declined in your wallet; nothing was sent.');
      else if (code === 4902) say('Your wallet does not know ' + data.chain_name + ': add that network to it, then try again.');
      else say('The wallet answered: ' + ((error && error.message) || String(error)) +
        '. If your wallet shows a transaction sent for this payment, do not pay again.');
      setButtons(false);
      return;
    }
    txLine.textContent = 'Transaction sent: ' + sentHash;
    showStatus(status);
    say('Transaction sent; reporting it to the service…');
    await report(sentHash);
    schedulePoll(0);
  }

  button.addEventListener('click', function () { void payWithWallet(); });
  if (signButton) signButton.addEventListener('click', function () { void signWithWallet(); });
  showStatus(status);
  if (status !== 'final' && status !== 'expired') schedulePoll(0);
})();
`;
