// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title Test USD Coin: a 6-decimal ERC-20 for local test chains only.
/// @notice Anyone may mint: it stands in for USDC on anvil and is worth nothing.
/// Never deploy it where real money moves.
/// @dev What payers' tools rely on is shaped like real USDC (Circle's FiatTokenV2_2): the name
/// "USD Coin" and version "2" of its EIP-712 domain, EIP-3009 transfer/receive/cancel
/// authorizations with the same type hashes, EIP-2612 permit, and signatures checked the same
/// way (ecrecover with low `s`, or EIP-1271 when the signer is a contract). So a wallet, an x402
/// client or a script that signs for Base's USDC signs for this token on a chain with its id.
contract TestUsdc {
    string public constant name = "USD Coin";
    string public constant symbol = "USDC";
    uint8 public constant decimals = 6;

    /// @notice The version of the EIP-712 domain, as FiatTokenV2_2's `version()`.
    function version() external pure returns (string memory) {
        return "2";
    }

    bytes32 private constant EIP712_DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH =
        keccak256(
            "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
        );
    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH =
        keccak256(
            "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
        );
    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH =
        keccak256("CancelAuthorization(address authorizer,bytes32 nonce)");
    bytes32 public constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

    /// The upper bound of a signature's `s` (EIP-2): a higher one is the malleable twin.
    uint256 private constant MAX_S = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;
    bytes4 private constant EIP1271_MAGIC = 0x1626ba7e;

    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    /// EIP-2612: the next permit nonce of each owner.
    mapping(address => uint256) public nonces;
    mapping(address => mapping(bytes32 => bool)) private _authorizationStates;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);

    function mint(address to, uint256 value) external {
        require(to != address(0), "mint to the zero address");
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _move(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        _approve(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            require(allowed >= value, "allowance too low");
            allowance[from][msg.sender] = allowed - value;
        }
        _move(from, to, value);
        return true;
    }

    /// @notice The EIP-712 domain separator, computed for the chain it runs on now.
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return
            keccak256(
                abi.encode(
                    EIP712_DOMAIN_TYPEHASH,
                    keccak256(bytes(name)),
                    keccak256(bytes("2")),
                    block.chainid,
                    address(this)
                )
            );
    }

    /// @notice EIP-3009: whether `nonce` of `authorizer` was used or canceled.
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizationStates[authorizer][nonce];
    }

    /// @notice EIP-3009: moves `value` from `from` to `to` on `from`'s signed authorization.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        _transferWithAuthorization(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH,
            from,
            to,
            value,
            validAfter,
            validBefore,
            nonce,
            abi.encodePacked(r, s, v)
        );
    }

    /// @notice The same with the signature as bytes (65 bytes r‖s‖v, or an EIP-1271 signature).
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        _transferWithAuthorization(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH,
            from,
            to,
            value,
            validAfter,
            validBefore,
            nonce,
            signature
        );
    }

    /// @notice EIP-3009: as transferWithAuthorization, but only the payee `to` may submit it.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        require(to == msg.sender, "FiatTokenV2: caller must be the payee");
        _transferWithAuthorization(
            RECEIVE_WITH_AUTHORIZATION_TYPEHASH,
            from,
            to,
            value,
            validAfter,
            validBefore,
            nonce,
            abi.encodePacked(r, s, v)
        );
    }

    /// @notice EIP-3009: the authorizer gives up an authorization it has not used.
    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external {
        _requireUnused(authorizer, nonce);
        bytes32 structHash = keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce));
        _requireSignedBy(authorizer, structHash, abi.encodePacked(r, s, v));
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationCanceled(authorizer, nonce);
    }

    /// @notice EIP-2612: sets `spender`'s allowance from `owner`'s signature.
    function permit(
        address owner,
        address spender,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        require(deadline == type(uint256).max || deadline >= block.timestamp, "FiatTokenV2: permit is expired");
        bytes32 structHash = keccak256(
            abi.encode(PERMIT_TYPEHASH, owner, spender, value, nonces[owner]++, deadline)
        );
        _requireSignedBy(owner, structHash, abi.encodePacked(r, s, v));
        _approve(owner, spender, value);
    }

    function _transferWithAuthorization(
        bytes32 typeHash,
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) private {
        require(block.timestamp > validAfter, "FiatTokenV2: authorization is not yet valid");
        require(block.timestamp < validBefore, "FiatTokenV2: authorization is expired");
        _requireUnused(from, nonce);
        bytes32 structHash = keccak256(abi.encode(typeHash, from, to, value, validAfter, validBefore, nonce));
        _requireSignedBy(from, structHash, signature);
        _authorizationStates[from][nonce] = true;
        emit AuthorizationUsed(from, nonce);
        _move(from, to, value);
    }

    function _requireUnused(address authorizer, bytes32 nonce) private view {
        require(!_authorizationStates[authorizer][nonce], "FiatTokenV2: authorization is used or canceled");
    }

    /// Accepts what FiatTokenV2_2's SignatureChecker accepts: an ECDSA signature by `signer` with
    /// low `s` and v 27/28, or, when `signer` is a contract, its EIP-1271 approval.
    function _requireSignedBy(address signer, bytes32 structHash, bytes memory signature) private view {
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
        if (signer.code.length > 0) {
            (bool ok, bytes memory answer) = signer.staticcall(
                abi.encodeWithSelector(EIP1271_MAGIC, digest, signature)
            );
            require(
                ok && answer.length >= 32 && abi.decode(answer, (bytes32)) == bytes32(EIP1271_MAGIC),
                "FiatTokenV2: invalid signature"
            );
            return;
        }
        require(signature.length == 65, "FiatTokenV2: invalid signature");
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 32))
            s := mload(add(signature, 64))
            v := byte(0, mload(add(signature, 96)))
        }
        require(uint256(s) <= MAX_S && (v == 27 || v == 28), "FiatTokenV2: invalid signature");
        address recovered = ecrecover(digest, v, r, s);
        require(recovered != address(0) && recovered == signer, "FiatTokenV2: invalid signature");
    }

    function _approve(address owner, address spender, uint256 value) private {
        allowance[owner][spender] = value;
        emit Approval(owner, spender, value);
    }

    function _move(address from, address to, uint256 value) private {
        require(to != address(0), "transfer to the zero address");
        uint256 held = balanceOf[from];
        require(held >= value, "balance too low");
        balanceOf[from] = held - value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}
