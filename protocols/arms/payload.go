package arms

import (
	"encoding/binary"
	"math/rand/v2"
)

// Payload shape. The study's cells use a mainnet-like payload that
// snappy-compresses about 1.40 : 1 (about 746 KB for 1 MiB), because random
// bytes are not representative for the compress-first arms
// (docs/references.md, "Payload").
//
// MainnetLikePayload models an execution block body as a run of
// transaction-like records laid out in 32-byte ABI words, the way calldata
// and receipts look on mainnet: incompressible hashes and signatures, values
// and nonces that are mostly leading zeros, and addresses and function
// selectors drawn from small pools so that they repeat within snappy's
// window. The word mix below was tuned so that snappy block encoding
// (klauspost/compress/snappy) gives 1.40 : 1 at 1 MiB (about 745-747 KB
// for seeds 1 to 5); TestPayloadRatio
// checks it for several seeds.
const (
	// payloadAddressPool is how many distinct 20-byte addresses a payload
	// draws from (popular contracts and accounts repeat).
	payloadAddressPool = 512
	// payloadSelectorPool is how many distinct 4-byte function selectors a
	// payload draws from.
	payloadSelectorPool = 64
)

// MainnetLikePayload returns size bytes of deterministic, mainnet-like
// payload for seed: the same (seed, size) always gives the same bytes, and a
// shorter payload for the same seed is a prefix of a longer one. It
// compresses about 1.40 : 1 under snappy (docs/references.md, "Payload").
func MainnetLikePayload(seed uint64, size int) []byte {
	if size <= 0 {
		return []byte{}
	}
	rng := rand.New(rand.NewPCG(seed, 0x5347494450415931)) // "SGIDPAY1"
	addrs := make([][20]byte, payloadAddressPool)
	for i := range addrs {
		fillRandom(rng, addrs[i][:])
	}
	sels := make([][4]byte, payloadSelectorPool)
	for i := range sels {
		fillRandom(rng, sels[i][:])
	}

	out := make([]byte, 0, size+512)
	var word [32]byte
	for len(out) < size {
		// One transaction-like record.
		// Header: nonce, gas, value as zero-heavy 32-byte words.
		out = appendSmallUint(out, &word, rng, 3)  // nonce
		out = appendSmallUint(out, &word, rng, 4)  // gas limit
		out = appendSmallUint(out, &word, rng, 10) // value (wei)
		out = appendAddress(out, &word, addrs[rng.IntN(len(addrs))])
		// Selector.
		out = append(out, sels[rng.IntN(len(sels))][:]...)
		// Calldata: a variable number of ABI words.
		n := 2 + rng.IntN(12)
		for range n {
			switch k := rng.IntN(100); {
			case k < payloadRandomWordPct:
				fillRandom(rng, word[:]) // hashes, packed data
				out = append(out, word[:]...)
			case k < payloadRandomWordPct+payloadAddressWordPct:
				out = appendAddress(out, &word, addrs[rng.IntN(len(addrs))])
			default:
				out = appendSmallUint(out, &word, rng, 1+rng.IntN(8))
			}
		}
		// Signature: r, s (random) and v (one byte).
		fillRandom(rng, word[:])
		out = append(out, word[:]...)
		fillRandom(rng, word[:])
		out = append(out, word[:]...)
		out = append(out, byte(27+rng.IntN(2)))
	}
	return out[:size]
}

// Calldata word mix in percent; the remainder are small integers. Tuned for
// the 1.40 : 1 snappy ratio (see MainnetLikePayload).
const (
	payloadRandomWordPct  = 77
	payloadAddressWordPct = 10
)

// appendSmallUint appends a 32-byte big-endian word whose low n bytes are
// random and the rest zero.
func appendSmallUint(out []byte, word *[32]byte, rng *rand.Rand, n int) []byte {
	clear(word[:])
	fillRandom(rng, word[32-n:])
	return append(out, word[:]...)
}

// appendAddress appends an ABI-encoded address: 12 zero bytes and the 20
// address bytes.
func appendAddress(out []byte, word *[32]byte, addr [20]byte) []byte {
	clear(word[:12])
	copy(word[12:], addr[:])
	return append(out, word[:]...)
}

func fillRandom(rng *rand.Rand, b []byte) {
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, rng.Uint64())
		b = b[8:]
	}
	if len(b) > 0 {
		var t [8]byte
		binary.LittleEndian.PutUint64(t[:], rng.Uint64())
		copy(b, t[:])
	}
}
