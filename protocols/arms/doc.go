// Package arms defines the study's arms as data: the catalogue of arm names
// with their forwarding policies and wire forms, the mainnet-like payload,
// segmentation into 16 or 32 KiB units, the structured message ids,
// Reed-Solomon coding with a Merkle-rooted descriptor, and the units a
// publisher sends for an arm with their completion rule.
//
// Every definition here follows docs/references.md (entries "Arms",
// "Structured ids", "Reed-Solomon", "Payload" and "Completion rule and
// statistics") and the report's Appendix A. The forwarding itself (phase
// forwarding, FINAL) is protocols/phase; variant B's push policy and claim
// ledger are protocols/partial.
package arms
