// Package robots is notify's group channels: messages posted to a group
// chat through the chat's incoming-webhook robot rather than to a person.
// A Robot speaks one of four wire formats:
//
//   - "webhook": gpucal's own JSON (the event's key, kind, job, text,
//     instant and fields) with an Idempotency-Key header, for any receiver;
//   - "wecom": a WeCom (企业微信) group robot;
//   - "feishu": a Feishu or Lark (飞书) custom bot, optionally signed;
//   - "dingtalk": a DingTalk (钉钉) custom robot, optionally signed.
//
// The robot's URL is the address (the recipient name the dispatcher passes,
// such as "@admins", is not used), and it is a credential: whoever has it
// can post to the group. So errors never show more of it than its scheme
// and host, and never the signing secret. Refusals are sorted as notify
// expects: rate limits become notify.RetryAfterError, refusals that
// retrying cannot fix (a bad key or signature, a 4xx) notify.PermanentError,
// and the rest (5xx, network) plain errors that the dispatcher retries
// with backoff. None of these robots can be asked whether a message
// arrived, so a sender that dies between the post and recording it may post
// that message twice; the webhook's receivers can drop the repeat by its
// Idempotency-Key.
//
// ParseGroups reads the GPUCAL_NOTIFY_GROUPS setting; cmd/gpucal builds
// the robots from it. The package imports notify and core only (and the
// standard library); nothing in gpucal but cmd/gpucal imports it.
package robots
