// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Forwarder} from "./Forwarder.sol";

/// @title Deploys and sweeps payment deposit addresses.
/// @notice A deposit address is the CREATE2 address of Forwarder(token, payee) made by this
/// factory with a salt (one per payment). It can be paid before anything is deployed there;
/// anyone may then call sweep() to deploy it and move its balance to the payee. The factory holds
/// nothing and has no owner.
contract ForwarderFactory {
    /// @notice A deposit address was swept: it held `amount` of `token`, now sent to `payee`.
    event Swept(
        address indexed forwarder,
        address indexed token,
        address indexed payee,
        bytes32 salt,
        uint256 amount
    );

    /// @notice The deposit address for (token, payee, salt), deployed or not.
    function addressOf(address token, address payee, bytes32 salt) public view returns (address) {
        bytes32 initCodeHash = keccak256(
            abi.encodePacked(type(Forwarder).creationCode, abi.encode(token, payee))
        );
        return
            address(
                uint160(
                    uint256(
                        keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, initCodeHash))
                    )
                )
            );
    }

    /// @notice Deploys the deposit address's forwarder if it is not there yet, then sweeps it.
    function sweep(address token, address payee, bytes32 salt) external returns (address forwarder) {
        forwarder = addressOf(token, payee, salt);
        if (forwarder.code.length == 0) {
            new Forwarder{salt: salt}(token, payee);
        }
        uint256 amount = _balanceOf(token, forwarder);
        Forwarder(forwarder).sweep();
        emit Swept(forwarder, token, payee, salt, amount);
    }

    function _balanceOf(address token, address holder) private view returns (uint256) {
        (bool ok, bytes memory answer) = token.staticcall(
            abi.encodeWithSignature("balanceOf(address)", holder)
        );
        require(ok && answer.length >= 32, "balanceOf failed");
        return abi.decode(answer, (uint256));
    }
}
