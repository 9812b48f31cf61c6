package main

/*
#include "qim.h"
*/
import "C"

import (
	"time"

	"github.com/qim-dev/qim/contract"
)

// The exported functions of qim.h: each converts its C arguments, calls api.go and converts the
// result back. Their prototypes must stay those of qim.h; the C build in gates/capiit includes
// the header cgo generates beside qim.h, so a difference fails to compile.

// finish stores the result and the error message for C and returns the call's code.
func finish(res string, err error, out, errOut **C.char) C.int {
	clearOut(out)
	clearOut(errOut)
	if err != nil {
		setOut(errOut, err.Error())
		return C.int(codeOf(err))
	}
	setOut(out, res)
	return C.int(codeOK)
}

//export qim_abi_version
func qim_abi_version() C.uint32_t { return C.QIM_ABI_VERSION }

//export qim_client_open
func qim_client_open(configJSON *C.char, out *C.qim_client, errOut **C.char) C.int {
	if configJSON == nil || out == nil {
		return finish("", errorf(codeInvalid, "config_json and out must not be NULL"), nil, errOut)
	}
	h, err := openClient(C.GoString(configJSON))
	if err == nil {
		*out = C.qim_client(h)
	}
	return finish("", err, nil, errOut)
}

//export qim_client_connect
func qim_client_connect(h C.qim_client, errOut **C.char) C.int {
	return finish("", connect(uint64(h)), nil, errOut)
}

//export qim_client_close
func qim_client_close(h C.qim_client) C.int {
	return C.int(codeOf(closeClient(uint64(h))))
}

//export qim_send
func qim_send(h C.qim_client, peer *C.char, body *C.uint8_t, n C.size_t, cmid, errOut **C.char) C.int {
	b, err := bodyOf(body, n)
	if err != nil || peer == nil {
		return finish("", firstErr(err, errorf(codeInvalid, "peer_user must not be NULL")), cmid, errOut)
	}
	res, err := send(uint64(h), C.GoString(peer), b)
	return finish(res, err, cmid, errOut)
}

//export qim_send_group
func qim_send_group(h C.qim_client, group *C.char, body *C.uint8_t, n C.size_t, cmid, errOut **C.char) C.int {
	b, err := bodyOf(body, n)
	if err != nil || group == nil {
		return finish("", firstErr(err, errorf(codeInvalid, "group_conversation must not be NULL")), cmid, errOut)
	}
	res, err := sendGroup(uint64(h), C.GoString(group), b)
	return finish(res, err, cmid, errOut)
}

//export qim_next_event
func qim_next_event(h C.qim_client, timeoutMs C.int32_t, out, errOut **C.char) C.int {
	res, err := nextEvent(uint64(h), time.Duration(max(timeoutMs, 0))*time.Millisecond)
	return finish(res, err, out, errOut)
}

//export qim_conversations
func qim_conversations(h C.qim_client, out, errOut **C.char) C.int {
	res, err := conversations(uint64(h))
	return finish(res, err, out, errOut)
}

//export qim_history
func qim_history(h C.qim_client, conv *C.char, anchor C.uint64_t, dir, limit, timeoutMs C.int32_t, out, errOut **C.char) C.int {
	if conv == nil {
		return finish("", errorf(codeInvalid, "conversation must not be NULL"), out, errOut)
	}
	res, err := history(uint64(h), C.GoString(conv), uint64(anchor), int(dir), int(limit), time.Duration(timeoutMs)*time.Millisecond)
	return finish(res, err, out, errOut)
}

//export qim_mark_read
func qim_mark_read(h C.qim_client, conv *C.char, seq C.uint64_t, out, errOut **C.char) C.int {
	if conv == nil {
		return finish("", errorf(codeInvalid, "conversation must not be NULL"), out, errOut)
	}
	res, err := markRead(uint64(h), C.GoString(conv), uint64(seq))
	return finish(res, err, out, errOut)
}

// bodyOf copies a message body, refusing one the protocol could never carry before copying it.
func bodyOf(p *C.uint8_t, n C.size_t) ([]byte, error) {
	if uint64(n) > uint64(contract.MaxFramePayload) {
		return nil, errorf(codeInvalid, "body of %d bytes is above the protocol's %d", uint64(n), contract.MaxFramePayload)
	}
	if p == nil && n > 0 {
		return nil, errorf(codeInvalid, "body is NULL with length %d", uint64(n))
	}
	return goBytes(p, n), nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

//export qim_join_room
func qim_join_room(h C.qim_client, room *C.char, replay C.int32_t, replayFrom C.uint64_t, timeoutMs C.int32_t, out, errOut **C.char) C.int {
	if room == nil {
		return finish("", errorf(codeInvalid, "room must not be NULL"), out, errOut)
	}
	res, err := joinRoom(uint64(h), C.GoString(room), replay != 0, uint64(replayFrom), time.Duration(timeoutMs)*time.Millisecond)
	return finish(res, err, out, errOut)
}

//export qim_leave_room
func qim_leave_room(h C.qim_client, room *C.char, timeoutMs C.int32_t, errOut **C.char) C.int {
	if room == nil {
		return finish("", errorf(codeInvalid, "room must not be NULL"), nil, errOut)
	}
	return finish("", leaveRoom(uint64(h), C.GoString(room), time.Duration(timeoutMs)*time.Millisecond), nil, errOut)
}

//export qim_send_room
func qim_send_room(h C.qim_client, room *C.char, body *C.uint8_t, n C.size_t, timeoutMs C.int32_t, out, errOut **C.char) C.int {
	b, err := bodyOf(body, n)
	if err != nil || room == nil {
		return finish("", firstErr(err, errorf(codeInvalid, "room must not be NULL")), out, errOut)
	}
	res, err := sendRoom(uint64(h), C.GoString(room), b, time.Duration(timeoutMs)*time.Millisecond)
	return finish(res, err, out, errOut)
}

//export qim_create_group
func qim_create_group(h C.qim_client, name, membersJSON *C.char, out, errOut **C.char) C.int {
	if name == nil || membersJSON == nil {
		return finish("", errorf(codeInvalid, "name and members_json must not be NULL"), out, errOut)
	}
	res, err := createGroup(uint64(h), C.GoString(name), C.GoString(membersJSON))
	return finish(res, err, out, errOut)
}

//export qim_group_members
func qim_group_members(h C.qim_client, group *C.char, timeoutMs C.int32_t, out, errOut **C.char) C.int {
	if group == nil {
		return finish("", errorf(codeInvalid, "group must not be NULL"), out, errOut)
	}
	res, err := groupMembers(uint64(h), C.GoString(group), time.Duration(timeoutMs)*time.Millisecond)
	return finish(res, err, out, errOut)
}

//export qim_recall
func qim_recall(h C.qim_client, conv *C.char, seq C.uint64_t, cmid, errOut **C.char) C.int {
	return amendExport(h, conv, seq, contract.AmendRecall, nil, 0, cmid, errOut)
}

//export qim_edit
func qim_edit(h C.qim_client, conv *C.char, seq C.uint64_t, body *C.uint8_t, n C.size_t, cmid, errOut **C.char) C.int {
	return amendExport(h, conv, seq, contract.AmendEdit, body, n, cmid, errOut)
}

//export qim_delete
func qim_delete(h C.qim_client, conv *C.char, seq C.uint64_t, cmid, errOut **C.char) C.int {
	return amendExport(h, conv, seq, contract.AmendDelete, nil, 0, cmid, errOut)
}

func amendExport(h C.qim_client, conv *C.char, seq C.uint64_t, act contract.AmendAction, body *C.uint8_t, n C.size_t, cmid, errOut **C.char) C.int {
	b, err := bodyOf(body, n)
	if err != nil || conv == nil {
		return finish("", firstErr(err, errorf(codeInvalid, "conversation must not be NULL")), cmid, errOut)
	}
	res, err := amend(uint64(h), C.GoString(conv), uint64(seq), act, b)
	return finish(res, err, cmid, errOut)
}

//export qim_react
func qim_react(h C.qim_client, conv *C.char, seq C.uint64_t, key *C.char, remove, timeoutMs C.int32_t, out, errOut **C.char) C.int {
	if conv == nil || key == nil {
		return finish("", errorf(codeInvalid, "conversation and key must not be NULL"), out, errOut)
	}
	res, err := react(uint64(h), C.GoString(conv), uint64(seq), C.GoString(key), remove != 0,
		time.Duration(timeoutMs)*time.Millisecond)
	return finish(res, err, out, errOut)
}

//export qim_read_receipts
func qim_read_receipts(h C.qim_client, group *C.char, seq C.uint64_t, timeoutMs C.int32_t, out, errOut **C.char) C.int {
	if group == nil {
		return finish("", errorf(codeInvalid, "group must not be NULL"), out, errOut)
	}
	res, err := readReceipts(uint64(h), C.GoString(group), uint64(seq), time.Duration(timeoutMs)*time.Millisecond)
	return finish(res, err, out, errOut)
}

//export qim_set_read_receipts
func qim_set_read_receipts(h C.qim_client, share, timeoutMs C.int32_t, out, errOut **C.char) C.int {
	res, err := setReadReceipts(uint64(h), share != 0, time.Duration(timeoutMs)*time.Millisecond)
	return finish(res, err, out, errOut)
}

//export qim_set_typing
func qim_set_typing(h C.qim_client, target *C.char, typing C.int32_t, errOut **C.char) C.int {
	if target == nil {
		return finish("", errorf(codeInvalid, "target must not be NULL"), nil, errOut)
	}
	return finish("", setTyping(uint64(h), C.GoString(target), typing != 0), nil, errOut)
}

//export qim_leave_group
func qim_leave_group(h C.qim_client, group *C.char, timeoutMs C.int32_t, out, errOut **C.char) C.int {
	if group == nil {
		return finish("", errorf(codeInvalid, "group must not be NULL"), out, errOut)
	}
	res, err := leaveGroup(uint64(h), C.GoString(group), time.Duration(timeoutMs)*time.Millisecond)
	return finish(res, err, out, errOut)
}

//export qim_register_push_token
func qim_register_push_token(h C.qim_client, platform C.int32_t, token, appID *C.char, timeoutMs C.int32_t, out, errOut **C.char) C.int {
	if token == nil || appID == nil {
		return finish("", errorf(codeInvalid, "token and app_id must not be NULL (pass \"\")"), out, errOut)
	}
	res, err := registerPushToken(uint64(h), int32(platform), C.GoString(token), C.GoString(appID),
		time.Duration(timeoutMs)*time.Millisecond)
	return finish(res, err, out, errOut)
}
