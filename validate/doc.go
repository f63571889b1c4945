// Package validate holds what uplink's results are checked against: the
// reference tables of the study's report and of its summary post
// (docs/references.md, "Public sources") as embedded data files, loaders
// for the reference backends' own records (the harness's JSON cell records
// and Shadow's per-node SHADOWSTAT lines), and the statistics the report
// computes from them (docs/references.md, "Completion rule and
// statistics").
//
// Censoring is carried through every step. A receiver that never completes
// has no completion time; a quantile, median, difference or range that
// depends on such a receiver is itself censored (Value.Censored). Censored
// values order after every known value, as if they were +Inf.
//
// The reference tables are listed by Tables and read by LoadTable; the arm
// catalogue of the report's Appendix A by Arms. tables/README.md says which
// report tables are captured, which are withheld from the provided copy, and
// how the columns are encoded.
package validate
