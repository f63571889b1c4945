// Package arms is the groundwork for the study's segmented arms: the
// mainnet-like payload, segmentation into 16 or 32 KiB units, the structured
// message ids, Reed-Solomon coding with a Merkle-rooted descriptor, and the
// catalogue of arm names with their wire forms.
//
// Every definition here follows /work/shared/reference/study-model.md
// (sections "Arms", "Structured ids", "Reed-Solomon", "Payload" and
// "Completion rule") and Appendix A of report.md. The forwarding policies
// themselves (phase forwarding, FINAL, variant B's claim ledger) are not in
// this package.
package arms
