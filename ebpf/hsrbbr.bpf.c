// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * hsrbbr: a BBR-style congestion control for links that stall (high-speed-rail handoffs),
 * loaded as a BPF struct_ops tcp_congestion_ops. Design and measurements: docs/hsrbbr.md.
 *
 * The model is BBR's (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue
 * 2016; draft-cardwell-iccrg-bbr-congestion-control): a windowed-max delivery rate, a
 * windowed-min RTT, pacing at gain x bandwidth and a cwnd of gain x BDP, with the phases
 * Startup -> Drain -> ProbeBW (eight-phase gain cycle) and ProbeRTT.
 *
 * What is different for stalls (a handoff outage delivers nothing for 0.1 .. 20 s):
 *  1. The model survives the stall. An RTO neither restarts the bandwidth search (full_bw is
 *     kept) nor lets the stall age the min-RTT estimate: the min-RTT clock is pushed forward
 *     by the stall's length, so the first ACKs after an outage do not trigger ProbeRTT
 *     (cwnd 4 for 200 ms) just because the outage was longer than the 10-s window.
 *  2. Quick re-probe when ACKs return. Stock behaviour after an RTO grows cwnd from 1 by the
 *     ACKed packets (slow-start like, log2(BDP) round trips). hsrbbr sets cwnd back to the
 *     target computed from the kept model as soon as the first ACK of the RTO episode
 *     delivers data, and starts a ProbeBW cycle in its probing (1.25) phase: the data leaves
 *     at the paced rate, not as a burst, and a new cell's lower capacity shows up as a lower
 *     delivery rate within the round.
 *  3. Spurious RTOs (the held outage: nothing was lost) are undone to the cwnd before the RTO.
 *  4. Loss bursts do not shrink the window once the model is built (no loss reduction, no
 *     packet conservation in fast recovery); pacing holds the rate (see set_cwnd).
 *  5. No long-term "policer" bandwidth mode: the kernel's BBR takes a burst of losses for a
 *     token-bucket policer and paces at the long-term rate for 48 rounds; a handoff's loss
 *     burst is not a policer.
 *
 * Units: bandwidth in packets per microsecond << BW_SHIFT; gains in 1/256 units; times in us.
 * Everything lives in icsk_ca_priv (104 bytes).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "Dual MIT/GPL";

#define BW_SHIFT 24
#define GAIN_UNIT 256
#define HIGH_GAIN 739          /* 2.885 x 256: 2/ln 2, doubles the rate each round */
#define DRAIN_GAIN 88          /* 1/2.885 */
#define CWND_GAIN 512          /* 2.0 */
#define PROBE_UP_GAIN 320      /* 1.25 */
#define PROBE_DOWN_GAIN 192    /* 0.75 */
#define CYCLE_LEN 8
#define BW_SLOTS 5             /* max filter: 5 slots of 2 rounds = ~10 rounds */
#define ROUNDS_PER_SLOT 2
#define MIN_RTT_WIN_US 10000000ULL   /* 10 s */
#define PROBE_RTT_US 200000ULL       /* 200 ms */
#define MIN_CWND 4
#define FULL_BW_THRESH 320     /* 1.25: still growing */
#define FULL_BW_ROUNDS 3
#define PACING_MARGIN 252      /* pace ~1 % below the estimate so queues drain */
#define STALL_MIN_US 200000ULL /* a gap without delivery this long counts as a stall */

/* Ablation (docs/hsrbbr.md "The fair test"): -DHSRBBR_NO_<CHANGE> removes one change of
 * docs/hsrbbr.md section 3 and names the algorithm after it; the default build is hsrbbr. */
#if defined(HSRBBR_NO_MODEL)          /* 1: an RTO restarts Startup, stalls age the min RTT */
#define HSRBBR_OPS hsrbbr_nomodel
#elif defined(HSRBBR_NO_REPROBE)      /* 2: no return to the model's window after an RTO */
#define HSRBBR_OPS hsrbbr_noprobe
#elif defined(HSRBBR_NO_UNDO)         /* 3: spurious RTOs keep the reduced window */
#define HSRBBR_OPS hsrbbr_noundo
#elif defined(HSRBBR_NO_LOSSKEEP)     /* 4: losses shrink the window as in Startup/BBR */
#define HSRBBR_OPS hsrbbr_noloss
#else
#define HSRBBR_OPS hsrbbr
#endif
#define HSRBBR_STR_(x) #x
#define HSRBBR_STR(x) HSRBBR_STR_(x)

#define TCP_CA_OPEN 0
#define TCP_CA_RECOVERY 3
#define TCP_CA_LOSS 4
#define TCP_INFINITE_SSTHRESH 0x7fffffff

enum { M_STARTUP, M_DRAIN, M_PROBE_BW, M_PROBE_RTT };

struct hsrbbr {
	u64 cycle_stamp;        /* us, start of the current gain-cycle phase */
	u64 min_rtt_stamp;      /* us, when min_rtt was last set (pushed forward by stalls) */
	u64 probe_rtt_done;     /* us, end of ProbeRTT, 0 = not yet timed */
	u64 last_delivery;      /* us, last ACK that delivered data */
	u32 bw[BW_SLOTS];       /* max bw per slot of ROUNDS_PER_SLOT rounds */
	u32 min_rtt_us;
	u32 round_count;
	u32 next_round_delivered;
	u32 full_bw;
	u32 prior_cwnd;         /* cwnd before recovery / RTO, restored after */
	u32 stall_cwnd;         /* target cwnd saved at the RTO (model kept) */
	u8 mode;
	u8 cycle_idx;
	u8 full_bw_cnt;
	u8 full_bw_reached;
	u8 prev_ca_state;
	u8 conserve;            /* packet conservation for the first round of fast recovery */
	u8 rto_pending;         /* an RTO happened, no data delivered since */
	u8 round_start;
	u8 rtt_expired;         /* the min-RTT window had expired at this ACK */
};

_Static_assert(sizeof(struct hsrbbr) <= 104, "fits icsk_ca_priv");

static __always_inline struct tcp_sock *tp_of(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct hsrbbr *ca_of(struct sock *sk)
{
	return (struct hsrbbr *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline u32 ca_state(struct sock *sk)
{
	return ((struct inet_connection_sock *)sk)->icsk_ca_state;
}

static __always_inline u32 in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* The verifier refuses a variable offset into the socket (icsk_ca_priv is part of it), so
 * the slots are addressed with constant indices only. */
static __always_inline u32 *bw_slot(struct hsrbbr *ca, u32 slot)
{
	switch (slot) {
	case 0: return &ca->bw[0];
	case 1: return &ca->bw[1];
	case 2: return &ca->bw[2];
	case 3: return &ca->bw[3];
	default: return &ca->bw[4];
	}
}

static __always_inline u32 max_bw(const struct hsrbbr *ca)
{
	u32 m = ca->bw[0];

	if (ca->bw[1] > m) m = ca->bw[1];
	if (ca->bw[2] > m) m = ca->bw[2];
	if (ca->bw[3] > m) m = ca->bw[3];
	if (ca->bw[4] > m) m = ca->bw[4];
	return m;
}

/* packets of the BDP at the given gain (+3 packets of headroom for delayed/stretched ACKs) */
static __always_inline u32 bdp_cwnd(const struct hsrbbr *ca, u32 bw, u32 gain)
{
	u64 w;

	if (ca->min_rtt_us == ~0U || !bw)
		return 10;     /* no model yet: the initial window */
	w = (u64)bw * ca->min_rtt_us;
	w = (w * gain) >> 8;
	w = (w + (1ULL << BW_SHIFT) - 1) >> BW_SHIFT;
	return (u32)w + 3;
}

static __always_inline void set_pacing(struct sock *sk, struct hsrbbr *ca, u32 bw, u32 gain)
{
	struct tcp_sock *tp = tp_of(sk);
	u64 rate;

	if (!bw) {
		/* no sample yet: init cwnd over the smoothed RTT (1 ms if unknown), at high gain */
		u32 srtt = tp->srtt_us >> 3;
		if (!srtt)
			srtt = 1000;
		rate = (u64)tp->snd_cwnd * tp->mss_cache * 1000000ULL / srtt;
		rate = (rate * HIGH_GAIN) >> 8;
	} else {
		rate = (u64)bw * tp->mss_cache;       /* bytes/us << BW_SHIFT */
		rate = (rate * gain) >> 8;
		rate = (rate * PACING_MARGIN) >> 8;
		rate = (rate * 1000000ULL) >> BW_SHIFT;
	}
	if (rate > sk->sk_max_pacing_rate)
		rate = sk->sk_max_pacing_rate;
	/* during Startup never lower the rate (the first samples under-estimate) */
	if (ca->full_bw_reached || rate > sk->sk_pacing_rate || !bw)
		sk->sk_pacing_rate = rate;
}

static __always_inline u32 pacing_gain(const struct hsrbbr *ca)
{
	switch (ca->mode) {
	case M_STARTUP:
		return HIGH_GAIN;
	case M_DRAIN:
		return DRAIN_GAIN;
	case M_PROBE_BW:
		if (ca->cycle_idx == 0)
			return PROBE_UP_GAIN;
		if (ca->cycle_idx == 1)
			return PROBE_DOWN_GAIN;
		return GAIN_UNIT;
	default:
		return GAIN_UNIT;
	}
}

static __always_inline void start_probe_bw(struct hsrbbr *ca, u64 now, u8 idx)
{
	ca->mode = M_PROBE_BW;
	ca->cycle_idx = idx;
	ca->cycle_stamp = now;
}

SEC("struct_ops")
void BPF_PROG(hsrbbr_init, struct sock *sk)
{
	struct tcp_sock *tp = tp_of(sk);
	struct hsrbbr *ca = ca_of(sk);
	ca->bw[0] = ca->bw[1] = ca->bw[2] = ca->bw[3] = ca->bw[4] = 0;
	ca->cycle_stamp = 0;
	ca->min_rtt_stamp = tp->tcp_mstamp;
	ca->probe_rtt_done = 0;
	ca->last_delivery = tp->tcp_mstamp;
	ca->min_rtt_us = tp->srtt_us ? (tp->srtt_us >> 3) : ~0U;
	ca->round_count = 0;
	ca->next_round_delivered = 0;
	ca->full_bw = 0;
	ca->prior_cwnd = 0;
	ca->stall_cwnd = 0;
	ca->mode = M_STARTUP;
	ca->cycle_idx = 0;
	ca->full_bw_cnt = 0;
	ca->full_bw_reached = 0;
	ca->prev_ca_state = TCP_CA_OPEN;
	ca->conserve = 0;
	ca->rto_pending = 0;
	ca->round_start = 0;
	ca->rtt_expired = 0;
	tp->snd_ssthresh = TCP_INFINITE_SSTHRESH;
	/* no fq qdisc here: ask TCP to pace by itself */
	sk->sk_pacing_status = SK_PACING_NEEDED;
	set_pacing(sk, ca, 0, HIGH_GAIN);
}

/* one delivery-rate sample per ACK; rounds counted in delivered packets */
static __always_inline void update_model(struct sock *sk, struct hsrbbr *ca, const struct rate_sample *rs, u64 now)
{
	struct tcp_sock *tp = tp_of(sk);
	u32 bw = 0;

	ca->round_start = 0;
	if (rs->delivered < 0 || rs->interval_us <= 0)
		return;
	if (rs->prior_delivered >= ca->next_round_delivered) {
		ca->next_round_delivered = tp->delivered;
		ca->round_count++;
		ca->round_start = 1;
		if (ca->round_count % ROUNDS_PER_SLOT == 0) {
			/* the oldest slot leaves the window */
			*bw_slot(ca, (ca->round_count / ROUNDS_PER_SLOT) % BW_SLOTS) = 0;
		}
	}
	bw = (u32)(((u64)rs->delivered << BW_SHIFT) / (u64)rs->interval_us);
	if (!rs->is_app_limited || bw >= max_bw(ca)) {
		u32 *cur = bw_slot(ca, (ca->round_count / ROUNDS_PER_SLOT) % BW_SLOTS);

		if (bw > *cur)
			*cur = bw;
	}
	/* windowed min: a lower sample wins; once the window has expired any sample replaces it
	 * (so the estimate can grow, e.g. after a handoff to a longer path) */
	ca->rtt_expired = ca->min_rtt_us != ~0U && now - ca->min_rtt_stamp > MIN_RTT_WIN_US;
	if (rs->rtt_us > 0 && ((u32)rs->rtt_us <= ca->min_rtt_us || (ca->rtt_expired && !rs->is_ack_delayed))) {
		ca->min_rtt_us = (u32)rs->rtt_us;
		ca->min_rtt_stamp = now;
	}
}

static __always_inline void update_phase(struct sock *sk, struct hsrbbr *ca, const struct rate_sample *rs, u64 now)
{
	struct tcp_sock *tp = tp_of(sk);
	u32 bw = max_bw(ca);
	u32 inflight = in_flight(tp);

	/* Startup ends when the bandwidth stops growing by 25 % for three rounds */
	if (!ca->full_bw_reached && ca->round_start && !rs->is_app_limited) {
		if ((u64)bw * GAIN_UNIT >= (u64)ca->full_bw * FULL_BW_THRESH) {
			ca->full_bw = bw;
			ca->full_bw_cnt = 0;
		} else if (++ca->full_bw_cnt >= FULL_BW_ROUNDS) {
			ca->full_bw_reached = 1;
		}
	}
	if (ca->mode == M_STARTUP && ca->full_bw_reached)
		ca->mode = M_DRAIN;
	if (ca->mode == M_DRAIN && inflight <= bdp_cwnd(ca, bw, GAIN_UNIT))
		start_probe_bw(ca, now, 2);

	/* ProbeBW gain cycle: each phase lasts one min RTT; the probe-up phase also waits for
	 * inflight to reach 1.25 BDP, the drain phase ends early once inflight is at the BDP */
	if (ca->mode == M_PROBE_BW) {
		u64 elapsed = now - ca->cycle_stamp;
		int next = elapsed > ca->min_rtt_us;

		if (ca->cycle_idx == 0)
			next = next && (rs->losses || inflight >= bdp_cwnd(ca, bw, PROBE_UP_GAIN));
		else if (ca->cycle_idx == 1)
			next = next || inflight <= bdp_cwnd(ca, bw, GAIN_UNIT);
		if (next) {
			ca->cycle_idx = (ca->cycle_idx + 1) % CYCLE_LEN;
			ca->cycle_stamp = now;
		}
	}

	/* ProbeRTT when the min RTT is older than its window (stall time excluded, see cong_control) */
	if (ca->mode != M_PROBE_RTT && ca->rtt_expired) {
		ca->mode = M_PROBE_RTT;
		ca->probe_rtt_done = 0;
		if (!ca->prior_cwnd || tp->snd_cwnd > ca->prior_cwnd)
			ca->prior_cwnd = tp->snd_cwnd;
	}
	if (ca->mode == M_PROBE_RTT) {
		if (!ca->probe_rtt_done && inflight <= MIN_CWND)
			ca->probe_rtt_done = now + PROBE_RTT_US;
		else if (ca->probe_rtt_done && now > ca->probe_rtt_done) {
			ca->min_rtt_stamp = now;
			if (tp->snd_cwnd < ca->prior_cwnd)
				tp->snd_cwnd = ca->prior_cwnd;
			if (ca->full_bw_reached)
				start_probe_bw(ca, now, 2);
			else
				ca->mode = M_STARTUP;
		}
	}
}

static __always_inline void set_cwnd(struct sock *sk, struct hsrbbr *ca, const struct rate_sample *rs, u32 acked)
{
	struct tcp_sock *tp = tp_of(sk);
	u32 state = ca_state(sk);
	u32 gain = ca->mode == M_STARTUP ? HIGH_GAIN : CWND_GAIN;
	u32 target = bdp_cwnd(ca, max_bw(ca), gain);
	u32 cwnd = tp->snd_cwnd;

	/* Once the model is built, losses do not shrink the window: a post-handoff loss burst
	 * (27 % of a window) is not congestion, and with a window of a few tens of packets the
	 * stock reduction plus packet conservation starves the ACK clock into an RTO (measured,
	 * docs/hsrbbr.md). Pacing keeps the rate at the estimated bandwidth. Before the model
	 * exists (Startup), losses count as in BBR. */
#ifdef HSRBBR_NO_LOSSKEEP
	const int keep = 0;
#else
	const int keep = ca->full_bw_reached;
#endif
	if (keep) {
		ca->conserve = 0;
	} else if (rs->losses > 0) {
		cwnd = cwnd > (u32)rs->losses ? cwnd - (u32)rs->losses : 1;
	}
	if (keep) {
		/* no packet conservation either */
	} else if (state == TCP_CA_RECOVERY && ca->prev_ca_state < TCP_CA_RECOVERY) {
		ca->conserve = 1;   /* first round of fast recovery: send what is ACKed */
		cwnd = in_flight(tp) + acked;
	} else if (state < TCP_CA_RECOVERY && ca->prev_ca_state >= TCP_CA_RECOVERY) {
		ca->conserve = 0;   /* recovery over: back to the window from before it */
		if (cwnd < ca->prior_cwnd)
			cwnd = ca->prior_cwnd;
	}
	if (ca->round_start)
		ca->conserve = 0;
	ca->prev_ca_state = state;

	if (ca->conserve) {
		if (cwnd < in_flight(tp) + acked)
			cwnd = in_flight(tp) + acked;
	} else if (ca->full_bw_reached) {
		cwnd = cwnd + acked < target ? cwnd + acked : target;
	} else if (cwnd < target || tp->delivered < 10) {
		cwnd = cwnd + acked;
	}
	if (cwnd < MIN_CWND)
		cwnd = MIN_CWND;
	if (ca->mode == M_PROBE_RTT && cwnd > MIN_CWND)
		cwnd = MIN_CWND;
	if (cwnd > tp->snd_cwnd_clamp)
		cwnd = tp->snd_cwnd_clamp;
	tp->snd_cwnd = cwnd;
}

SEC("struct_ops")
void BPF_PROG(hsrbbr_cong_control, struct sock *sk, u32 ack, int flag, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tp_of(sk);
	struct hsrbbr *ca = ca_of(sk);
	u64 now = tp->tcp_mstamp;
	u32 acked = rs->acked_sacked;

	if (rs->delivered > 0) {
		u64 gap = now - ca->last_delivery;

		/* a stall: the time without delivery does not age the min RTT */
#ifndef HSRBBR_NO_MODEL
		if (gap > STALL_MIN_US && ca->min_rtt_stamp < now) {
			ca->min_rtt_stamp += gap;
			if (ca->min_rtt_stamp > now)
				ca->min_rtt_stamp = now;
		}
#else
		(void)gap;
#endif
		ca->last_delivery = now;
		/* first delivery after an RTO: back to the model's window, probe up at once */
		if (ca->rto_pending) {
			ca->rto_pending = 0;
#ifndef HSRBBR_NO_REPROBE
			if (ca->full_bw_reached) {
				start_probe_bw(ca, now, 0);
				if (tp->snd_cwnd < ca->stall_cwnd)
					tp->snd_cwnd = ca->stall_cwnd;
				if (tp->snd_cwnd > tp->snd_cwnd_clamp)
					tp->snd_cwnd = tp->snd_cwnd_clamp;
			}
#endif
		}
	}
	update_model(sk, ca, rs, now);
	update_phase(sk, ca, rs, now);
	set_pacing(sk, ca, max_bw(ca), pacing_gain(ca));
	set_cwnd(sk, ca, rs, acked);
}

SEC("struct_ops")
void BPF_PROG(hsrbbr_set_state, struct sock *sk, u8 new_state)
{
	struct tcp_sock *tp = tp_of(sk);
	struct hsrbbr *ca = ca_of(sk);

	if (new_state == TCP_CA_LOSS) {
		/* RTO: keep bw, min RTT and full_bw; remember the window the model asks for */
		u32 target = bdp_cwnd(ca, max_bw(ca), CWND_GAIN);

		ca->stall_cwnd = ca->prior_cwnd > target ? ca->prior_cwnd : target;
		ca->rto_pending = 1;
		ca->prev_ca_state = TCP_CA_LOSS;
		ca->round_start = 1;
		ca->next_round_delivered = tp->delivered;
#ifdef HSRBBR_NO_MODEL
		/* as stock bbr after an RTO: search the bandwidth again from Startup */
		ca->bw[0] = ca->bw[1] = ca->bw[2] = ca->bw[3] = ca->bw[4] = 0;
		ca->full_bw = 0;
		ca->full_bw_cnt = 0;
		ca->full_bw_reached = 0;
		ca->mode = M_STARTUP;
#endif
	}
}

SEC("struct_ops")
void BPF_PROG(hsrbbr_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = tp_of(sk);
	struct hsrbbr *ca = ca_of(sk);

	/* restarting after an application pause: pace at the known rate, not the probe gain */
	if (event == CA_EVENT_TX_START && tp->app_limited && ca->full_bw_reached && ca->mode == M_PROBE_BW)
		set_pacing(sk, ca, max_bw(ca), GAIN_UNIT);
}

SEC("struct_ops")
__u32 BPF_PROG(hsrbbr_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tp_of(sk);
	struct hsrbbr *ca = ca_of(sk);

	/* called on entering recovery or RTO: save the window to restore afterwards */
	if (ca->prev_ca_state < TCP_CA_RECOVERY && ca->mode != M_PROBE_RTT)
		ca->prior_cwnd = tp->snd_cwnd;
	else if (tp->snd_cwnd > ca->prior_cwnd)
		ca->prior_cwnd = tp->snd_cwnd;
	return tp->snd_ssthresh;
}

SEC("struct_ops")
__u32 BPF_PROG(hsrbbr_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = tp_of(sk);
	struct hsrbbr *ca = ca_of(sk);

	/* a spurious RTO or recovery (F-RTO, Eifel, DSACK): nothing was lost, take the window back */
	ca->rto_pending = 0;
#ifdef HSRBBR_NO_UNDO
	return tp->snd_cwnd;
#else
	return tp->snd_cwnd > ca->prior_cwnd ? tp->snd_cwnd : ca->prior_cwnd;
#endif
}

SEC("struct_ops")
__u32 BPF_PROG(hsrbbr_sndbuf_expand, struct sock *sk)
{
	return 3;
}

SEC(".struct_ops")
struct tcp_congestion_ops HSRBBR_OPS = {
	.init = (void *)hsrbbr_init,
	.cong_control = (void *)hsrbbr_cong_control,
	.set_state = (void *)hsrbbr_set_state,
	.cwnd_event = (void *)hsrbbr_cwnd_event,
	.ssthresh = (void *)hsrbbr_ssthresh,
	.undo_cwnd = (void *)hsrbbr_undo_cwnd,
	.sndbuf_expand = (void *)hsrbbr_sndbuf_expand,
	.name = HSRBBR_STR(HSRBBR_OPS),
};
