// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title A payment's deposit address.
/// @notice Made by ForwarderFactory with CREATE2 for one (token, payee) pair. Its only behaviour
/// is to send its whole balance of that token to that payee, and anyone may ask it to: there is
/// no owner, no key and no other destination, so nobody (the service included) can take what is
/// sent here. Other tokens and ether are not handled (ether is refused: there is no receive).
contract Forwarder {
    address public immutable token;
    address public immutable payee;

    constructor(address token_, address payee_) {
        token = token_;
        payee = payee_;
    }

    /// @notice Sends this contract's whole token balance to the payee. Harmless with none.
    function sweep() external {
        (bool ok, bytes memory answer) = token.staticcall(
            abi.encodeWithSignature("balanceOf(address)", address(this))
        );
        require(ok && answer.length >= 32, "balanceOf failed");
        uint256 balance = abi.decode(answer, (uint256));
        if (balance == 0) return;
        // A low-level call so a token that returns nothing (not ERC-20 strict) is handled too;
        // a token that returns false or reverts makes the sweep revert, keeping the balance.
        (ok, answer) = token.call(
            abi.encodeWithSignature("transfer(address,uint256)", payee, balance)
        );
        require(ok && (answer.length == 0 || abi.decode(answer, (bool))), "transfer failed");
    }
}
