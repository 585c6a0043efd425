// Package digest turns a usage report (core.Report) into the weekly
// digest: a PNG chart (Chart) and a short, chat-sized text in English or
// Chinese (Summary). Both are pure functions of the report, so the same
// report always gives the same bytes and the same words.
//
// digest imports core, the standard library and gonum.org/v1/plot (pure
// Go, fonts embedded, so it renders headless). It never imports the chat,
// notification or web adapters: they call it and send what it returns.
package digest
