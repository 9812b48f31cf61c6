// Package notify is the NotificationService: it wakes a user's devices through their push
// providers (FCM, APNs, a webhook relay) when a message reaches the user while none of their
// devices is online.
//
// It reads qim.dispatch, the log every mailbox entry is materialized from, with its own
// positions (Kafka's offset API under QIM_NOTIFY_GROUP, no membership), and follows
// qim.presence from its start to know who is online (the PresenceDirectory the MailboxNodes
// build, ADR-0027). For each recipient of a message that can be unread — not the sender, no
// device online — it looks up the devices' registrations (services/internal/pushtoken, written
// by the gateways) and sends one notification per (message, device), carrying the
// conversation, the message id and seq and the sender, never the body: the device wakes,
// connects and pulls, its mailbox being the source of truth.
//
// Invariants:
//   - Never on the commit path: nothing the writer, fanout or MailboxNode does waits for this
//     service, and its failure changes no ACK (the chaos cell push-provider-failing shows it).
//   - At least once per (message, device): a batch's positions are stored only after each of its
//     notifications was accepted, refused for good or given up (QIM_NOTIFY_GIVE_UP); a done mark
//     written after the provider accepted keeps a replay from sending it again, so a device is
//     woken twice for one message only when this process dies between the provider's answer and
//     the mark.
//   - A provider that refuses a device's token removes that registration (unless a newer token
//     replaced it meanwhile).
//   - Nobody is judged offline before the presence directory holds what qim.presence held at
//     start (no push storm after a restart).
//
// A notification may reach a device a few milliseconds before its MailboxNode materialized the
// message; the device then connects, and the message reaches it by the online push path or its
// next pull, as any message does.
//
// Rejected: deciding in the MailboxNode, which knows who is online when it pushes (its batch
// would wait for providers, or its in-memory queue would lose notifications on a crash that
// its log position has already moved past); a consumer group (a rebalance mid-batch, and a
// second source of truth for positions, as for every static consumer here).
package notify
