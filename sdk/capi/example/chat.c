/*
 * chat.c: a C program on libqim (qim.h). Two users on one gateway: A sends to B, B reads the
 * message, lists its conversations (one unread), reads the history page, marks it read
 * (none unread); both join a room, A publishes, B reads it live; A creates a group with B
 * and sends to it, B reads it, lists the members and leaves; then CYCLES more messages A to B,
 * each one committed at A and received at B, every buffer freed, and qim_outstanding() must be
 * 0 at the end. Exits 0 only when all of it held; prints what failed otherwise.
 *
 *   CHAT_TOKEN_A=... CHAT_TOKEN_B=... chat GATEWAY DATA_DIR USER_A USER_B CYCLES
 *
 * The tokens come from the environment, never the command line (a process list shows that).
 * JSON is read with strstr: enough for the fields checked here, not a parser to copy.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qim.h"

static int failures;

#define CHECK(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond)) {                                                     \
			fprintf(stderr, "chat: FAIL %s:%d: ", __FILE__, __LINE__);     \
			fprintf(stderr, __VA_ARGS__);                                  \
			fprintf(stderr, "\n");                                         \
			failures++;                                                    \
			return -1;                                                     \
		}                                                                  \
	} while (0)

static double now_s(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* open_client opens and connects one user's client. */
static int open_client(const char *gateway, const char *dir, const char *user, const char *token, qim_client *out) {
	char cfg[4096];
	char *err = NULL;
	snprintf(cfg, sizeof cfg, "{\"data_dir\":\"%s\",\"gateway\":\"%s\",\"user\":\"%s\",\"device\":\"c-%s\",\"token\":\"%s\"}",
		dir, gateway, user, user, token);
	int rc = qim_client_open(cfg, out, &err);
	CHECK(rc == QIM_OK, "open %s: %d %s", user, rc, err ? err : "");
	rc = qim_client_connect(*out, &err);
	CHECK(rc == QIM_OK, "connect %s: %d %s", user, rc, err ? err : "");
	return 0;
}

/* count counts the occurrences of needle in s (none of an empty needle). */
static int count(const char *s, const char *needle) {
	int n = 0;
	if (!*needle) {
		return 0;
	}
	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) {
		n++;
	}
	return n;
}

/* drain reads c's events for up to timeout_ms in total, adding the received messages matching
 * mark (a "body_b64" prefix) and the sends committed to *received and *committed; it returns
 * when both reach their wants. */
static int drain(qim_client c, const char *mark, int want_received, int *received, int want_committed, int *committed,
	int timeout_ms) {
	double deadline = now_s() + timeout_ms / 1000.0;
	while (*received < want_received || *committed < want_committed) {
		char *ev = NULL, *err = NULL;
		int rc = qim_next_event(c, 200, &ev, &err);
		if (rc == QIM_E_TIMEOUT) {
			qim_free(err);
			CHECK(now_s() < deadline, "timed out: received %d of %d, committed %d of %d", *received, want_received,
				*committed, want_committed);
			continue;
		}
		CHECK(rc == QIM_OK, "next_event: %d %s", rc, err ? err : "");
		if (strstr(ev, "\"type\":\"messages_added\"")) {
			*received += count(ev, mark);
		} else if (strstr(ev, "\"type\":\"committed\"")) {
			(*committed)++;
		} else if (strstr(ev, "\"type\":\"failed\"")) {
			fprintf(stderr, "chat: a send failed: %s\n", ev);
			failures++;
		}
		qim_free(ev);
	}
	return 0;
}

/* copy_field copies the string value of "key":"..." after from into out. */
static int copy_field(const char *json, const char *key, char *out, size_t n) {
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\":\"", key);
	const char *p = strstr(json, pat);
	if (!p) {
		return -1;
	}
	p += strlen(pat);
	const char *q = strchr(p, '"');
	if (!q || (size_t)(q - p) >= n) {
		return -1;
	}
	memcpy(out, p, q - p);
	out[q - p] = 0;
	return 0;
}

/* wait_event reads c's events until one contains needle. */
static int wait_event(qim_client c, const char *needle, int timeout_ms);

/* amendments: B reacts to A's message and A sees the event; A edits it and B's copy is amended. */
static int amendments(qim_client a, qim_client b, const char *conv, const char *seq) {
	char *res = NULL, *err = NULL, *cmid = NULL;
	int rc = qim_react(b, (char *)conv, strtoull(seq, NULL, 10), "\xf0\x9f\x91\x8d", 0, 10000, &res, &err);
	CHECK(rc == QIM_OK && strstr(res, "\"changed\":true") && strstr(res, "\"count\":1"), "react: %d %s %s", rc,
		err ? err : "", res ? res : "");
	qim_free(res);
	if (wait_event(a, "\"type\":\"reaction_changed\"", 15000)) {
		return -1;
	}
	const char *body = "edited in C";
	rc = qim_edit(a, (char *)conv, strtoull(seq, NULL, 10), (uint8_t *)body, strlen(body), &cmid, &err);
	CHECK(rc == QIM_OK && cmid && strlen(cmid) == 32, "edit: %d %s", rc, err ? err : "");
	qim_free(cmid);
	if (wait_event(b, "\"type\":\"messages_amended\"", 15000)) {
		return -1;
	}
	rc = qim_recall(a, (char *)conv, 999999, &cmid, &err);
	CHECK(rc == QIM_E_INVALID && cmid == NULL && err != NULL, "recall of a message not stored: %d", rc);
	qim_free(err);
	printf("chat: B reacted to A's message, A saw it; A edited it, B's copy amended\n");
	return 0;
}

/* first_message: A to B; B's session list, history and read watermark. */
static int first_message(qim_client a, qim_client b, const char *user_a, const char *user_b) {
	char *cmid = NULL, *err = NULL, *res = NULL;
	const char *body = "hello from C";
	int rc = qim_send(a, (char *)user_b, (uint8_t *)body, strlen(body), &cmid, &err);
	CHECK(rc == QIM_OK && cmid && strlen(cmid) == 32, "send: %d %s", rc, err ? err : "");
	qim_free(cmid);
	int got = 0, committed = 0, none = 0;
	if (drain(a, "", 0, &none, 1, &committed, 30000) || drain(b, "\"body_b64\":\"aGVsbG8gZnJvbSBD\"", 1, &got, 0, &none, 30000)) {
		return -1;
	}
	rc = qim_conversations(b, &res, &err);
	CHECK(rc == QIM_OK, "conversations: %d %s", rc, err ? err : "");
	char peer[64], conv[40], seq[32];
	snprintf(peer, sizeof peer, "\"peer\":\"%s\"", user_a);
	CHECK(strstr(res, peer) && strstr(res, "\"unread\":1,"), "B's session list lacks A's conversation with 1 unread: %s", res);
	CHECK(copy_field(res, "id", conv, sizeof conv) == 0 && copy_field(res, "latest_seq", seq, sizeof seq) == 0, "ids in %s", res);
	qim_free(res);
	rc = qim_history(b, conv, 0, 1, 20, 10000, &res, &err);
	CHECK(rc == QIM_OK && strstr(res, "\"body_b64\":\"aGVsbG8gZnJvbSBD\""), "history: %d %s %s", rc, err ? err : "", res ? res : "");
	qim_free(res);
	rc = qim_mark_read(b, conv, strtoull(seq, NULL, 10), &res, &err);
	CHECK(rc == QIM_OK && strstr(res, "\"unread\":0,"), "mark_read: %d %s %s", rc, err ? err : "", res ? res : "");
	qim_free(res);
	printf("chat: A -> B delivered, listed with 1 unread, in history, marked read (conversation %s)\n", conv);
	return amendments(a, b, conv, seq);
}

/* wait_event reads c's events until one contains needle. */
static int wait_event(qim_client c, const char *needle, int timeout_ms) {
	double deadline = now_s() + timeout_ms / 1000.0;
	for (;;) {
		char *ev = NULL, *err = NULL;
		int rc = qim_next_event(c, 200, &ev, &err);
		if (rc == QIM_E_TIMEOUT) {
			qim_free(err);
			CHECK(now_s() < deadline, "timed out waiting for an event with %s", needle);
			continue;
		}
		CHECK(rc == QIM_OK, "next_event: %d %s", rc, err ? err : "");
		int found = strstr(ev, needle) != NULL;
		qim_free(ev);
		if (found) {
			return 0;
		}
	}
}

/* room: A and B join a room, A publishes, B reads the event live, both leave. */
static int room(qim_client a, qim_client b, const char *user_a, const char *user_b) {
	char id[40], *res = NULL, *err = NULL;
	snprintf(id, sizeof id, "%016llx%016llx", strtoull(user_a, NULL, 10), strtoull(user_b, NULL, 10));
	int rc = qim_join_room(b, id, 0, 0, 10000, &res, &err);
	CHECK(rc == QIM_OK && strstr(res, "\"replay_truncated\":false"), "B joins: %d %s %s", rc, err ? err : "", res ? res : "");
	qim_free(res);
	rc = qim_join_room(a, id, 0, 0, 10000, &res, &err);
	CHECK(rc == QIM_OK, "A joins: %d %s", rc, err ? err : "");
	qim_free(res);
	const char *body = "hello room";
	rc = qim_send_room(a, id, (uint8_t *)body, strlen(body), 10000, &res, &err);
	CHECK(rc == QIM_OK && strstr(res, "\"room_seq\":\""), "A publishes: %d %s", rc, err ? err : "");
	qim_free(res);
	if (wait_event(b, "\"body_b64\":\"aGVsbG8gcm9vbQ==\"", 10000)) {
		return -1;
	}
	CHECK(qim_leave_room(a, id, 10000, &err) == QIM_OK && qim_leave_room(b, id, 10000, &err) == QIM_OK, "leave: %s", err ? err : "");
	printf("chat: room %s joined, published, read live, left\n", id);
	return 0;
}

/* group: A creates a group with B and sends to it; B reads the message, lists the two
 * members and leaves. */
static int group(qim_client a, qim_client b, const char *user_a, const char *user_b) {
	char members[64], gid[40], *res = NULL, *err = NULL, *cmid = NULL;
	snprintf(members, sizeof members, "[\"%s\"]", user_b);
	int rc = qim_create_group(a, "c-group", members, &res, &err);
	CHECK(rc == QIM_OK && copy_field(res, "group", gid, sizeof gid) == 0, "create_group: %d %s", rc, err ? err : "");
	qim_free(res);
	if (wait_event(a, "\"type\":\"group_created\"", 15000)) {
		return -1;
	}
	const char *body = "hello group";
	rc = qim_send_group(a, gid, (uint8_t *)body, strlen(body), &cmid, &err);
	CHECK(rc == QIM_OK, "send_group: %d %s", rc, err ? err : "");
	qim_free(cmid);
	if (wait_event(b, "\"body_b64\":\"aGVsbG8gZ3JvdXA=\"", 15000)) {
		return -1;
	}
	rc = qim_group_members(b, gid, 10000, &res, &err);
	char ua[64], ub[64];
	snprintf(ua, sizeof ua, "\"user\":\"%s\"", user_a);
	snprintf(ub, sizeof ub, "\"user\":\"%s\"", user_b);
	CHECK(rc == QIM_OK && strstr(res, ua) && strstr(res, ub) && count(res, "\"user\":") == 2, "members: %d %s %s", rc,
		err ? err : "", res ? res : "");
	qim_free(res);
	rc = qim_read_receipts(a, gid, 0, 10000, &res, &err);
	CHECK(rc == QIM_OK && strstr(res, ub) && count(res, "\"user\":") == 1, "read_receipts: %d %s %s", rc,
		err ? err : "", res ? res : "");
	qim_free(res);
	rc = qim_set_typing(a, gid, 1, &err);
	CHECK(rc == QIM_OK, "set_typing in the group: %d %s", rc, err ? err : "");
	if (wait_event(b, "\"type\":\"typing\"", 15000)) {
		return -1;
	}
	rc = qim_set_read_receipts(b, 0, 10000, &res, &err);
	CHECK(rc == QIM_OK && strstr(res, "\"share\":false"), "set_read_receipts off: %d %s", rc, err ? err : "");
	qim_free(res);
	rc = qim_read_receipts(b, gid, 0, 10000, &res, &err);
	CHECK(rc == QIM_E_SERVER && res == NULL && err && strstr(err, "FORBIDDEN"), "receipts while withheld: %d %s", rc, err ? err : "");
	qim_free(err);
	err = NULL;
	rc = qim_set_read_receipts(b, 1, 10000, &res, &err);
	CHECK(rc == QIM_OK && strstr(res, "\"share\":true"), "set_read_receipts on: %d %s", rc, err ? err : "");
	qim_free(res);
	rc = qim_leave_group(b, gid, 10000, &res, &err);
	CHECK(rc == QIM_OK && strstr(res, "\"left_at_seq\":\""), "leave_group: %d %s", rc, err ? err : "");
	qim_free(res);
	printf("chat: group %s created, message read, 2 members listed, B's read watermark pulled, typing seen, "
		"receipts withheld and shared again, left\n", gid);
	return 0;
}

/* refusals: bad input is an error code and a message to free, never a crash. */
static int refusals(qim_client a) {
	char *cmid = NULL, *err = NULL, *ev = NULL;
	int rc = qim_send(a, "not-a-user", (uint8_t *)"x", 1, &cmid, &err);
	CHECK(rc == QIM_E_INVALID && cmid == NULL && err != NULL, "send to a bad peer: %d", rc);
	qim_free(err);
	err = NULL;
	rc = qim_set_typing(a, "not-a-target", 1, &err);
	CHECK(rc == QIM_E_INVALID && err != NULL, "typing to a bad target: %d", rc);
	qim_free(err);
	err = NULL;
	rc = qim_next_event(987654321, 0, &ev, &err);
	CHECK(rc == QIM_E_HANDLE && ev == NULL && err != NULL, "unknown handle: %d", rc);
	qim_free(err);
	return 0;
}

/* cycles sends n messages A to B in batches, each committed at A and received at B. */
static int cycles(qim_client a, qim_client b, const char *user_b, int n) {
	double t0 = now_s();
	int sent = 0, received = 0, committed = 0;
	char body[64];
	while (sent < n) {
		int batch = n - sent < 100 ? n - sent : 100;
		for (int i = 0; i < batch; i++) {
			char *cmid = NULL, *err = NULL;
			int len = snprintf(body, sizeof body, "cycle %d", sent + i);
			int rc = qim_send(a, (char *)user_b, (uint8_t *)body, len, &cmid, &err);
			CHECK(rc == QIM_OK, "send %d: %d %s", sent + i, rc, err ? err : "");
			qim_free(cmid);
		}
		sent += batch;
		/* "Y3ljbGUg" is base64 of "cycle ": only this loop's messages count. */
		if (drain(a, "", 0, &(int){0}, sent, &committed, 60000) ||
			drain(b, "\"body_b64\":\"Y3ljbGUg", sent, &received, 0, &(int){0}, 60000)) {
			return -1;
		}
	}
	printf("chat: %d cycles (send, commit, receive) in %.1f s\n", n, now_s() - t0);
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 6 || !getenv("CHAT_TOKEN_A") || !getenv("CHAT_TOKEN_B")) {
		fprintf(stderr, "usage: CHAT_TOKEN_A=... CHAT_TOKEN_B=... chat GATEWAY DATA_DIR USER_A USER_B CYCLES\n");
		return 2;
	}
	if (qim_abi_version() != QIM_ABI_VERSION) {
		fprintf(stderr, "chat: libqim ABI %u, built against %d\n", qim_abi_version(), QIM_ABI_VERSION);
		return 1;
	}
	const char *gateway = argv[1], *dir = argv[2], *user_a = argv[3], *user_b = argv[4];
	char dir_a[1024], dir_b[1024];
	snprintf(dir_a, sizeof dir_a, "%s/a", dir);
	snprintf(dir_b, sizeof dir_b, "%s/b", dir);
	qim_client a = 0, b = 0;
	if (open_client(gateway, dir_a, user_a, getenv("CHAT_TOKEN_A"), &a) == 0 &&
		open_client(gateway, dir_b, user_b, getenv("CHAT_TOKEN_B"), &b) == 0 &&
		first_message(a, b, user_a, user_b) == 0 && room(a, b, user_a, user_b) == 0 &&
		group(a, b, user_a, user_b) == 0 && refusals(a) == 0) {
		cycles(a, b, user_b, atoi(argv[5]));
	}
	if (a && qim_client_close(a) != QIM_OK) {
		fprintf(stderr, "chat: FAIL close A\n");
		failures++;
	}
	if (b && qim_client_close(b) != QIM_OK) {
		fprintf(stderr, "chat: FAIL close B\n");
		failures++;
	}
	if (qim_client_close(a) != QIM_E_HANDLE) {
		fprintf(stderr, "chat: FAIL a closed handle closed twice\n");
		failures++;
	}
	long long left = (long long)qim_outstanding();
	if (left != 0) {
		fprintf(stderr, "chat: FAIL %lld buffers handed out and never freed\n", left);
		failures++;
	}
	if (failures) {
		return 1;
	}
	printf("chat: OK, 0 buffers outstanding\n");
	return 0;
}
