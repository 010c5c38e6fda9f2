// SPDX-License-Identifier: GPL-2.0
/*
 * phy_sim - a simulated MDIO bus with Asix PHYs (AX88772A, AX88772C, AX88796B)
 *
 * Registers a platform device and driver, an MDIO bus below it whose PHYs
 * answer at register level like the Asix parts, and one net_device per PHY
 * (sim0, sim1, ...) connected with phy_connect_direct(). "ip link set dev
 * sim0 up" starts the real phylib state machine, which then drives whichever
 * PHY driver bound to the PHY (ax88796b, ax88796b_rust or genphy).
 *
 * Controls, counters and an MDIO load generator live in debugfs under
 * /sys/kernel/debug/phy_sim/ (see docs/simulator.md).
 *
 * Register model (clause 22):
 *  - PHYSID1/2 give the model's ID.
 *  - BMCR.RESET starts a reset only on a 0->1 toggle of the written bit
 *    (reset_needs_toggle, on by default: the written bit stays latched
 *    until a write clears it, as on the X-Surf 100 AX88796B), reads as set
 *    for reset_delay_ms, then all registers return to their defaults and
 *    autoneg restarts.  BMCR writes during a reset are ignored.
 *  - Autoneg completes aneg_delay_ms after it (re)starts if our ADVERTISE
 *    and the partner's abilities share a mode; the best common mode shows
 *    in LPA and in BMCR's speed/duplex bits.  Forced mode links up when the
 *    partner supports the forced speed.
 *  - BMSR.LSTATUS is latched low: any link loss reads as down once.
 *  - Power-down and isolate: no link.
 *
 * Clause 45 (the QT2025, a 10G PHY with an on-chip CPU whose firmware is
 * loaded over MDIO): PMA/PMD, PCS and PHY XS answer with the QT2025's ID,
 * devices-in-package and 10GBASE-R abilities; the hardware revision in
 * 1.0xD001; 24 KiB of CPU SRAM at 3.0x8000-0xBFFF and 4.0x8000-0x9FFF that
 * keeps each written byte; the link comes up (STAT1.LSTATUS, latched low, in
 * all three MMDs) once the CPU runs from SRAM (3.0xE854 = 0x0040 with the
 * CPU out of reset, 1.0xC300 bit 1) and the cable is in; the firmware's
 * status in 3.0xD7FD reads booting (0x10) for QT2025_FW_BOOT_MS after that
 * start, then running.  Clause 22 reads
 * of it answer 0xffff, as no Clause 22 PHY is there.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/etherdevice.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/ktime.h>
#include <linux/mdio.h>
#include <linux/mii.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/phy.h>
#include <linux/platform_device.h>
#include <linux/rtnetlink.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#define SIM_MAX_PHYS		8
#define SIM_NREGS		32

#define SIM_BMSR_BASE	(BMSR_100FULL | BMSR_100HALF | BMSR_10FULL | \
			 BMSR_10HALF | 0x0040 /* MF preamble suppression */ | \
			 BMSR_ANEGCAPABLE | BMSR_ERCAP)
#define SIM_BMCR_DEFAULT (BMCR_ANENABLE | BMCR_SPEED100 | BMCR_FULLDPLX)
#define SIM_BMCR_RW	(BMCR_LOOPBACK | BMCR_SPEED100 | BMCR_ANENABLE | \
			 BMCR_PDOWN | BMCR_ISOLATE | BMCR_FULLDPLX | BMCR_CTST)
#define SIM_ADV_DEFAULT	(ADVERTISE_ALL | ADVERTISE_CSMA)
#define SIM_ADV_RW	(ADVERTISE_ALL | ADVERTISE_PAUSE_CAP | \
			 ADVERTISE_PAUSE_ASYM | ADVERTISE_RFAULT)
#define SIM_PARTNER_RW	(ADVERTISE_ALL | ADVERTISE_PAUSE_CAP | \
			 ADVERTISE_PAUSE_ASYM)

static char *phys = "ax88772a@1,ax88772c@2,ax88796b@3";
module_param(phys, charp, 0444);
MODULE_PARM_DESC(phys, "PHYs as MODEL@ADDR[,MODEL@ADDR...]; MODEL is ax88772a, ax88772c, ax88796b or qt2025 (Clause 45) (default: one of each Asix at 1, 2, 3)");

static unsigned int qt2025_hw_rev = 0xb301;
module_param(qt2025_hw_rev, uint, 0444);
MODULE_PARM_DESC(qt2025_hw_rev, "the QT2025's hardware revision in 1.0xD001 (default 0xb301; its driver takes only 0xb3xx)");

static unsigned int aneg_delay_ms = 100;
module_param(aneg_delay_ms, uint, 0444);
MODULE_PARM_DESC(aneg_delay_ms, "initial autoneg/link training time in ms (default 100)");

static unsigned int reset_delay_ms = 10;
module_param(reset_delay_ms, uint, 0444);
MODULE_PARM_DESC(reset_delay_ms, "initial BMCR reset duration in ms (default 10)");

static bool cable = true;
module_param(cable, bool, 0444);
MODULE_PARM_DESC(cable, "cable plugged in at load time (default 1)");

struct sim_model {
	const char *name;
	const char *key;
	u32 id;
	bool c45;		/* Clause 45 only: the QT2025 model */
};

static const struct sim_model sim_models[] = {
	{ "AX88772A", "ax88772a", 0x003b1861 },
	{ "AX88772C", "ax88772c", 0x003b1881 },
	{ "AX88796B", "ax88796b", 0x003b1841 },
	{ "QT2025", "qt2025", 0x0043a400, true },
};

static const char *const sim_reg_names[SIM_NREGS] = {
	"BMCR", "BMSR", "PHYSID1", "PHYSID2", "ADVERTISE", "LPA", "EXPANSION",
	"NPAGE", "LPNPAGE", "CTRL1000", "STAT1000", "MMD_PSE_C", "MMD_PSE_S",
	"MMD_CTRL", "MMD_DATA", "ESTATUS",
};

struct sim_inject {
	int err;		/* negative errno, 0: no rule */
	unsigned int count;	/* accesses left; UINT_MAX: forever */
	bool rd, wr;
};

struct sim_counters {
	u64 reads[SIM_NREGS], writes[SIM_NREGS];
	u64 rd_err[SIM_NREGS], wr_err[SIM_NREGS];
	u64 resets, resets_ignored, aneg_restarts;
};

/* The QT2025's CPU SRAM: 16 KiB at 3.0x8000-0xBFFF, then 8 KiB at 4.0x8000-0x9FFF. */
#define QT2025_SRAM_PCS		(16 * 1024)
#define QT2025_SRAM_XS		(8 * 1024)
#define QT2025_SRAM_BASE	0x8000
#define QT2025_HW_REV		0xd001	/* PMA/PMD */
#define QT2025_MICRO_RESETN	0xc300	/* PMA/PMD; bit 1: the CPU runs */
#define QT2025_CPU_BOOT		0xe854	/* PCS; 0x00c0 boot ROM, 0x0040 SRAM */
#define QT2025_BOOT_SRAM	0x0040
#define QT2025_FW_STATUS	0xd7fd	/* PCS; 0x00 held, 0x10 booting, else running */
#define QT2025_FW_BOOTING	0x0010
#define QT2025_FW_RUNNING	0x0070	/* ours: the driver takes any but 0x00 and 0x10 */
#define QT2025_FW_BOOT_MS	120	/* from the start from SRAM to the firmware's status */
#define SIM_C45_REGS		64	/* registers counted and stored one by one */
#define SIM_C45_RULES		8	/* error injection rules */

/* A Clause 45 register other than the SRAM: its value and its accesses. */
struct sim_c45_reg {
	u8 devad;
	u16 reg;
	u16 val;
	u64 reads, writes, rd_err, wr_err;
};

struct sim_c45_rule {
	u8 devad;
	u16 reg;
	struct sim_inject in;
};

struct sim_c45 {
	struct sim_c45_reg regs[SIM_C45_REGS];
	int nregs;
	u64 other_reads, other_writes;	/* beyond SIM_C45_REGS distinct registers */
	u8 sram[QT2025_SRAM_PCS + QT2025_SRAM_XS];
	u64 sram_reads[2], sram_writes[2], sram_rd_err[2], sram_wr_err[2];
	struct sim_c45_rule rules[SIM_C45_RULES];
	struct debugfs_blob_wrapper sram_blob;
	ktime_t cpu_start;	/* when the CPU last started from SRAM */
};

struct sim_load {
	struct task_struct *task;
	bool running, threaded;
	bool resume;		/* phy_resume() calls (a driver callback each), not reads */
	int reg;
	unsigned int rate, secs;
	u64 done, errors, elapsed_ns;
};

struct sim;

struct sim_phy;

struct sim_attr {
	const char *name;
	umode_t mode;
	int (*show)(struct seq_file *m, struct sim_phy *p);
	int (*store)(struct sim_phy *p, char *buf);
	const char *usage;
};

struct sim_file {
	struct sim_phy *p;
	const struct sim_attr *a;
};

#define SIM_NATTRS 13

struct sim_phy {
	struct sim *sim;
	int addr;
	const struct sim_model *model;

	spinlock_t lock;	/* register state, controls, counters */
	/* registers */
	u16 bmcr;		/* stored bits, without RESET and ANRESTART */
	u16 adv;
	u16 regs[SIM_NREGS];	/* everything without its own model */
	bool reset_wr;		/* last written BMCR.RESET (toggle quirk) */
	bool in_reset;
	ktime_t reset_end;
	ktime_t train_start;	/* autoneg / link training (re)started */
	bool lfail;		/* BMSR.LSTATUS latched low */
	bool was_up;
	/* environment */
	bool plugged;
	u16 partner;
	unsigned int aneg_delay_ms, reset_delay_ms;
	unsigned int mdio_delay_us;	/* each access sleeps this long: a slow bus */
	bool lpa_zero, reset_needs_toggle, kick;
	bool dying;		/* no more kicks */
	struct delayed_work kick_work;
	struct sim_inject inj[SIM_NREGS];
	struct sim_counters cnt;
	struct sim_c45 *c45;	/* Clause 45 models only */

	struct mutex ctl;	/* load generator */
	struct sim_load load;

	struct net_device *ndev;
	struct phy_device *phydev;
	bool connected, started;
	struct dentry *dir;
	struct sim_file files[SIM_NATTRS];
};

struct sim {
	struct platform_device *pdev;
	struct mii_bus *bus;
	struct sim_phy *by_addr[PHY_MAX_ADDR];
	struct sim_phy *phy[SIM_MAX_PHYS];
	int nphys;
	struct dentry *root;
	struct sim_file gfile;
};

struct sim_priv {
	struct sim_phy *p;
};

/* --- register model (p->lock held) --- */

static u16 sim_best_mode(u16 common)
{
	static const u16 order[] = { ADVERTISE_100FULL, ADVERTISE_100HALF,
				     ADVERTISE_10FULL, ADVERTISE_10HALF };
	int i;

	for (i = 0; i < ARRAY_SIZE(order); i++)
		if (common & order[i])
			return order[i];
	return 0;
}

static struct sim_c45_reg *sim_c45_find(struct sim_phy *p, int devad, u16 reg, bool add);

/* Whether the QT2025's CPU is out of reset and runs the firmware from SRAM. */
static bool sim_c45_firmware_runs(struct sim_phy *p)
{
	struct sim_c45_reg *resetn = sim_c45_find(p, MDIO_MMD_PMAPMD, QT2025_MICRO_RESETN, false);
	struct sim_c45_reg *boot = sim_c45_find(p, MDIO_MMD_PCS, QT2025_CPU_BOOT, false);

	return resetn && (resetn->val & 0x2) && boot && boot->val == QT2025_BOOT_SRAM;
}

/*
 * The QT2025's firmware status (3.0xD7FD): 0 while the CPU is held in reset,
 * booting until QT2025_FW_BOOT_MS after it started from SRAM (or while it runs
 * the boot ROM), then running.  Linux 7.x's driver polls it after the load.
 */
static u16 sim_c45_firmware_status(struct sim_phy *p)
{
	struct sim_c45_reg *resetn = sim_c45_find(p, MDIO_MMD_PMAPMD, QT2025_MICRO_RESETN, false);

	if (!resetn || !(resetn->val & 0x2))
		return 0;
	if (!sim_c45_firmware_runs(p) ||
	    ktime_before(ktime_get(), ktime_add_ms(p->c45->cpu_start, QT2025_FW_BOOT_MS)))
		return QT2025_FW_BOOTING;
	return QT2025_FW_RUNNING;
}

/* The QT2025's link: the firmware runs, the cable is in, training is done. */
static bool sim_c45_link(struct sim_phy *p, ktime_t now)
{
	return p->plugged && sim_c45_firmware_runs(p) &&
	       !ktime_before(now, ktime_add_ms(p->train_start, p->aneg_delay_ms));
}

/* Link state now; *mode is the ADVERTISE_* bit of the resolved mode (0 for Clause 45). */
static bool sim_link(struct sim_phy *p, ktime_t now, u16 *mode)
{
	u16 common;

	*mode = 0;
	if (p->model->c45)
		return sim_c45_link(p, now);
	if (!p->plugged || p->in_reset || (p->bmcr & (BMCR_PDOWN | BMCR_ISOLATE)))
		return false;
	if (ktime_before(now, ktime_add_ms(p->train_start, p->aneg_delay_ms)))
		return false;
	if (p->bmcr & BMCR_ANENABLE) {
		common = p->adv & p->partner & ADVERTISE_ALL;
	} else if (p->bmcr & BMCR_SPEED100) {
		/* Forced: the partner detects the speed by parallel detection. */
		common = (p->partner & (ADVERTISE_100FULL | ADVERTISE_100HALF)) ?
			 ((p->bmcr & BMCR_FULLDPLX) ? ADVERTISE_100FULL : ADVERTISE_100HALF) : 0;
	} else {
		common = (p->partner & (ADVERTISE_10FULL | ADVERTISE_10HALF)) ?
			 ((p->bmcr & BMCR_FULLDPLX) ? ADVERTISE_10FULL : ADVERTISE_10HALF) : 0;
	}
	*mode = sim_best_mode(common);
	return *mode != 0;
}

/*
 * With kick on, run the phylib state machine when training can end (at @when),
 * as a link interrupt would, instead of waiting for the next 1 s poll.
 */
static void sim_kick_at(struct sim_phy *p, ktime_t now, ktime_t when)
{
	s64 ns = ktime_to_ns(ktime_sub(when, now));

	if (p->kick && !p->dying)
		mod_delayed_work(system_wq, &p->kick_work,
				 nsecs_to_jiffies(max_t(s64, ns, 0)) + 1);
}

/* The link goes down now (latched) and training restarts at @start. */
static void sim_retrain_at(struct sim_phy *p, ktime_t now, ktime_t start)
{
	p->lfail = true;
	p->was_up = false;
	p->train_start = start;
	sim_kick_at(p, now, ktime_add_ms(start, p->aneg_delay_ms));
}

static void sim_retrain(struct sim_phy *p, ktime_t now)
{
	sim_retrain_at(p, now, now);
}

static void sim_defaults(struct sim_phy *p)
{
	p->bmcr = SIM_BMCR_DEFAULT;
	p->adv = SIM_ADV_DEFAULT;
	memset(p->regs, 0, sizeof(p->regs));
}

/* Catch up with time: finish a reset, notice a lost link. */
static bool sim_sync(struct sim_phy *p, ktime_t now, u16 *mode)
{
	bool up;

	if (p->in_reset && !ktime_before(now, p->reset_end)) {
		p->in_reset = false;
		sim_defaults(p);
		p->train_start = p->reset_end;
	}
	up = sim_link(p, now, mode);
	if (p->was_up && !up)
		p->lfail = true;
	p->was_up = up;
	return up;
}

/* Value of a register; @peek: no side effects (latch clear). */
static u16 sim_reg_read(struct sim_phy *p, int reg, bool peek)
{
	ktime_t now = ktime_get();
	bool an = p->bmcr & BMCR_ANENABLE;
	u16 mode, v;
	bool up;

	up = sim_sync(p, now, &mode);
	switch (reg) {
	case MII_BMCR:
		v = p->bmcr;
		if (p->in_reset)
			v |= BMCR_RESET;
		if (an && up) {
			v &= ~(BMCR_SPEED100 | BMCR_FULLDPLX);
			if (mode & (ADVERTISE_100FULL | ADVERTISE_100HALF))
				v |= BMCR_SPEED100;
			if (mode & (ADVERTISE_100FULL | ADVERTISE_10FULL))
				v |= BMCR_FULLDPLX;
		}
		return v;
	case MII_BMSR:
		v = SIM_BMSR_BASE;
		if (up && !p->lfail)
			v |= BMSR_LSTATUS;
		if (up && an)
			v |= BMSR_ANEGCOMPLETE;
		if (!peek)
			p->lfail = false;
		return v;
	case MII_PHYSID1:
		return p->model->id >> 16;
	case MII_PHYSID2:
		return p->model->id & 0xffff;
	case MII_ADVERTISE:
		return p->adv;
	case MII_LPA:
		if (!up || !an || p->lpa_zero)
			return 0;
		return p->partner | LPA_LPACK | ADVERTISE_CSMA;
	case MII_EXPANSION:
		return (up && an) ? EXPANSION_NWAY : 0;
	case MII_MMD_DATA:
		/* No MMDs behind the indirect access: data reads as 0. */
		if (p->regs[MII_MMD_CTRL] & 0xc000)
			return 0;
		return p->regs[MII_MMD_DATA];
	default:
		return p->regs[reg];
	}
}

static void sim_reg_write(struct sim_phy *p, int reg, u16 val)
{
	ktime_t now = ktime_get();
	bool rst, edge;
	u16 mode, old;

	sim_sync(p, now, &mode);
	switch (reg) {
	case MII_BMCR:
		rst = val & BMCR_RESET;
		edge = rst && !p->reset_wr;
		p->reset_wr = p->reset_needs_toggle && rst;
		if (p->in_reset)
			return;		/* busy: only the RESET latch follows */
		if (rst) {
			if (!edge) {
				/* RESET written while latched set: nothing happens. */
				p->cnt.resets_ignored++;
				return;
			}
			p->in_reset = true;
			p->reset_end = ktime_add_ms(now, p->reset_delay_ms);
			p->cnt.resets++;
			sim_retrain_at(p, now, p->reset_end);
			/* Zero delay: done at once, the next access sees it. */
			return;
		}
		old = p->bmcr;
		p->bmcr = val & SIM_BMCR_RW;
		if (((old ^ p->bmcr) & (BMCR_ANENABLE | BMCR_PDOWN | BMCR_ISOLATE)) ||
		    (!(p->bmcr & BMCR_ANENABLE) &&
		     ((old ^ p->bmcr) & (BMCR_SPEED100 | BMCR_FULLDPLX))))
			sim_retrain(p, now);
		if ((val & BMCR_ANRESTART) && (p->bmcr & BMCR_ANENABLE)) {
			p->cnt.aneg_restarts++;
			sim_retrain(p, now);
		}
		return;
	case MII_BMSR:
	case MII_PHYSID1:
	case MII_PHYSID2:
	case MII_LPA:
	case MII_EXPANSION:
		return;		/* read-only */
	case MII_ADVERTISE:
		p->adv = (val & SIM_ADV_RW) | ADVERTISE_CSMA;
		return;
	default:
		p->regs[reg] = val;
	}
}

/* An injected error for this access, or 0. */
static int sim_inject_check(struct sim_phy *p, int reg, bool write)
{
	struct sim_inject *in = &p->inj[reg];

	if (!in->err || !in->count || !(write ? in->wr : in->rd))
		return 0;
	if (in->count != UINT_MAX)
		in->count--;
	return in->err;
}

/* --- Clause 45: the QT2025 (p->lock held) --- */

#define QT2025_MMDS	(MDIO_DEVS_PMAPMD | MDIO_DEVS_PCS | MDIO_DEVS_PHYXS)

static bool sim_c45_present(int devad)
{
	return devad < 32 && (QT2025_MMDS & BIT(devad));
}

/* Which SRAM byte DEVAD.REG is (0..24 KiB), or -1. */
static int sim_c45_sram(int devad, u16 reg)
{
	if (reg < QT2025_SRAM_BASE)
		return -1;
	if (devad == MDIO_MMD_PCS && reg < QT2025_SRAM_BASE + QT2025_SRAM_PCS)
		return reg - QT2025_SRAM_BASE;
	if (devad == MDIO_MMD_PHYXS && reg < QT2025_SRAM_BASE + QT2025_SRAM_XS)
		return QT2025_SRAM_PCS + reg - QT2025_SRAM_BASE;
	return -1;
}

/* The register's slot; with @add, a new one (0 until written) if there is room. */
static struct sim_c45_reg *sim_c45_find(struct sim_phy *p, int devad, u16 reg, bool add)
{
	struct sim_c45 *c = p->c45;
	int i;

	for (i = 0; i < c->nregs; i++)
		if (c->regs[i].devad == devad && c->regs[i].reg == reg)
			return &c->regs[i];
	if (!add || c->nregs == SIM_C45_REGS)
		return NULL;
	c->regs[c->nregs] = (struct sim_c45_reg){ .devad = devad, .reg = reg };
	return &c->regs[c->nregs++];
}

/* Stored registers with a value at power-up: 10G speed selected, 10GBASE-SR. */
static void sim_c45_defaults(struct sim_phy *p)
{
	sim_c45_find(p, MDIO_MMD_PMAPMD, MDIO_CTRL1, true)->val = MDIO_CTRL1_SPEED10G;
	sim_c45_find(p, MDIO_MMD_PMAPMD, MDIO_CTRL2, true)->val = MDIO_PMA_CTRL2_10GBSR;
	sim_c45_find(p, MDIO_MMD_PCS, MDIO_CTRL1, true)->val = MDIO_CTRL1_SPEED10G;
}

/* STAT1 of a present MMD: LSTATUS latched low (a read clears the latch), FAULT while down. */
static u16 sim_c45_stat1(struct sim_phy *p, bool up, bool peek)
{
	u16 v = up && !p->lfail ? MDIO_STAT1_LSTATUS : MDIO_STAT1_FAULT;

	if (!peek)
		p->lfail = false;
	return v;
}

static u16 sim_c45_reg_read(struct sim_phy *p, int devad, u16 reg, bool peek)
{
	struct sim_c45_reg *r;
	int sram;
	u16 mode;
	bool up;

	if (!sim_c45_present(devad))
		return 0xffff;	/* no such MMD: nothing drives the data line */
	up = sim_sync(p, ktime_get(), &mode);
	sram = sim_c45_sram(devad, reg);
	if (sram >= 0)
		return p->c45->sram[sram];
	switch (reg) {
	case MDIO_STAT1:
		return sim_c45_stat1(p, up, peek);
	case MII_PHYSID1:
		return p->model->id >> 16;
	case MII_PHYSID2:
		return p->model->id & 0xffff;
	case MDIO_DEVS1:
		return QT2025_MMDS;
	case MDIO_DEVS2:
		return 0;
	}
	switch (devad) {
	case MDIO_MMD_PMAPMD:
		if (reg == MDIO_SPEED)
			return MDIO_SPEED_10G;
		if (reg == MDIO_STAT2)
			return MDIO_STAT2_DEVPRST_VAL | MDIO_PMA_STAT2_10GBSR |
			       MDIO_PMA_STAT2_10GBLR;
		if (reg == QT2025_HW_REV)
			return qt2025_hw_rev;
		break;
	case MDIO_MMD_PCS:
		if (reg == MDIO_STAT2)
			return MDIO_STAT2_DEVPRST_VAL | MDIO_PCS_STAT2_10GBR;
		if (reg == QT2025_FW_STATUS)
			return sim_c45_firmware_status(p);
		if (reg == MDIO_PCS_10GBRT_STAT1)
			/* block lock, and bit 12: the receive link is up */
			return up ? MDIO_PCS_10GBRT_STAT1_BLKLK | 0x1000 : 0;
		break;
	case MDIO_MMD_PHYXS:
		if (reg == MDIO_STAT2)
			return MDIO_STAT2_DEVPRST_VAL;
		if (reg == MDIO_PHYXS_LNSTAT)
			return up ? MDIO_PHYXS_LNSTAT_ALIGN | MDIO_PHYXS_LNSTAT_SYNC0 |
				    MDIO_PHYXS_LNSTAT_SYNC1 | MDIO_PHYXS_LNSTAT_SYNC2 |
				    MDIO_PHYXS_LNSTAT_SYNC3 : 0;
		break;
	}
	r = sim_c45_find(p, devad, reg, false);
	return r ? r->val : 0;
}

static void sim_c45_reg_write(struct sim_phy *p, int devad, u16 reg, u16 val)
{
	ktime_t now = ktime_get();
	bool was_running, running;
	struct sim_c45_reg *r;
	u16 mode;
	int sram;

	if (!sim_c45_present(devad))
		return;
	sim_sync(p, now, &mode);
	sram = sim_c45_sram(devad, reg);
	if (sram >= 0) {
		p->c45->sram[sram] = val;	/* a byte per register */
		return;
	}
	switch (reg) {
	case MDIO_STAT1:
	case MII_PHYSID1:
	case MII_PHYSID2:
	case MDIO_SPEED:
	case MDIO_DEVS1:
	case MDIO_DEVS2:
	case MDIO_STAT2:
		return;		/* read-only */
	}
	was_running = sim_c45_firmware_runs(p);
	r = sim_c45_find(p, devad, reg, true);
	if (r)
		r->val = val;
	running = sim_c45_firmware_runs(p);
	/* The CPU starts (or stops) running the firmware: the link trains from now. */
	if (running != was_running)
		sim_retrain(p, now);
	if (running && !was_running)
		p->c45->cpu_start = now;
}

/* --- the MDIO bus --- */

/* A slow bus: the access sleeps (MDIO accessors run in process context). */
static void sim_mdio_delay(struct sim_phy *p)
{
	unsigned int us = READ_ONCE(p->mdio_delay_us);

	if (us)
		usleep_range(us, us + us / 8 + 1);
}

static int sim_mdio_read(struct mii_bus *bus, int addr, int reg)
{
	struct sim *sim = bus->priv;
	struct sim_phy *p = sim->by_addr[addr];
	int ret;

	if (!p)
		return 0xffff;	/* nothing answers: pulled-up data line */
	sim_mdio_delay(p);
	reg &= SIM_NREGS - 1;
	spin_lock(&p->lock);
	p->cnt.reads[reg]++;
	ret = sim_inject_check(p, reg, false);
	if (ret)
		p->cnt.rd_err[reg]++;
	else if (p->model->c45)
		ret = 0xffff;	/* no Clause 22 registers */
	else
		ret = sim_reg_read(p, reg, false);
	spin_unlock(&p->lock);
	return ret;
}

static int sim_mdio_write(struct mii_bus *bus, int addr, int reg, u16 val)
{
	struct sim *sim = bus->priv;
	struct sim_phy *p = sim->by_addr[addr];
	int ret;

	if (!p)
		return 0;
	sim_mdio_delay(p);
	reg &= SIM_NREGS - 1;
	spin_lock(&p->lock);
	p->cnt.writes[reg]++;
	ret = sim_inject_check(p, reg, true);
	if (ret)
		p->cnt.wr_err[reg]++;
	else if (!p->model->c45)
		sim_reg_write(p, reg, val);
	spin_unlock(&p->lock);
	return ret;
}

/* An injected error for this Clause 45 access, or 0. */
static int sim_c45_inject_check(struct sim_phy *p, int devad, u16 reg, bool write)
{
	int i;

	for (i = 0; i < SIM_C45_RULES; i++) {
		struct sim_c45_rule *rule = &p->c45->rules[i];

		if (rule->in.err && rule->devad == devad && rule->reg == reg) {
			struct sim_inject *in = &rule->in;

			if (!in->count || !(write ? in->wr : in->rd))
				return 0;
			if (in->count != UINT_MAX)
				in->count--;
			return in->err;
		}
	}
	return 0;
}

/* Counts a Clause 45 access: per register, per SRAM half, or beyond the table. */
static void sim_c45_count(struct sim_phy *p, int devad, u16 reg, bool write, bool err)
{
	struct sim_c45 *c = p->c45;
	int sram = sim_c45_sram(devad, reg);
	struct sim_c45_reg *r;

	if (sram >= 0) {
		int half = sram >= QT2025_SRAM_PCS;

		if (write) {
			c->sram_writes[half]++;
			c->sram_wr_err[half] += err;
		} else {
			c->sram_reads[half]++;
			c->sram_rd_err[half] += err;
		}
		return;
	}
	r = sim_c45_find(p, devad, reg, true);
	if (!r) {
		if (write)
			c->other_writes++;
		else
			c->other_reads++;
		return;
	}
	if (write) {
		r->writes++;
		r->wr_err += err;
	} else {
		r->reads++;
		r->rd_err += err;
	}
}

static int sim_mdio_read_c45(struct mii_bus *bus, int addr, int devad, int reg)
{
	struct sim *sim = bus->priv;
	struct sim_phy *p = sim->by_addr[addr];
	int ret;

	if (!p || !p->model->c45)
		return 0xffff;	/* no Clause 45 PHY answers here */
	sim_mdio_delay(p);
	spin_lock(&p->lock);
	ret = sim_c45_inject_check(p, devad, reg, false);
	sim_c45_count(p, devad, reg, false, ret);
	if (!ret)
		ret = sim_c45_reg_read(p, devad, reg, false);
	spin_unlock(&p->lock);
	return ret;
}

static int sim_mdio_write_c45(struct mii_bus *bus, int addr, int devad, int reg, u16 val)
{
	struct sim *sim = bus->priv;
	struct sim_phy *p = sim->by_addr[addr];
	int ret;

	if (!p || !p->model->c45)
		return 0;
	sim_mdio_delay(p);
	spin_lock(&p->lock);
	ret = sim_c45_inject_check(p, devad, reg, true);
	sim_c45_count(p, devad, reg, true, ret);
	if (!ret)
		sim_c45_reg_write(p, devad, reg, val);
	spin_unlock(&p->lock);
	return ret;
}

/* Run the phylib state machine now, as a link interrupt would. */
static void sim_kick(struct sim_phy *p)
{
	if (READ_ONCE(p->kick) && p->connected && READ_ONCE(p->started))
		phy_trigger_machine(p->phydev);
}

static void sim_kick_work(struct work_struct *work)
{
	sim_kick(container_of(to_delayed_work(work), struct sim_phy, kick_work));
}

/* --- the net_device --- */

static int sim_ndo_open(struct net_device *ndev)
{
	struct sim_phy *p = ((struct sim_priv *)netdev_priv(ndev))->p;

	if (!p->connected)
		return -ENODEV;
	if (p->model->c45) {
		/* As the QT2025's MAC sets it: no autoneg, 10G full (phylib's forced set-up). */
		mutex_lock(&p->phydev->lock);
		p->phydev->autoneg = AUTONEG_DISABLE;
		p->phydev->speed = SPEED_10000;
		p->phydev->duplex = DUPLEX_FULL;
		mutex_unlock(&p->phydev->lock);
	}
	phy_start(p->phydev);
	WRITE_ONCE(p->started, true);
	return 0;
}

static int sim_ndo_stop(struct net_device *ndev)
{
	struct sim_phy *p = ((struct sim_priv *)netdev_priv(ndev))->p;

	if (!p->connected || !p->started)
		return 0;
	WRITE_ONCE(p->started, false);
	phy_stop(p->phydev);
	return 0;
}

static netdev_tx_t sim_ndo_start_xmit(struct sk_buff *skb, struct net_device *ndev)
{
	ndev->stats.tx_dropped++;
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

static const struct net_device_ops sim_netdev_ops = {
	.ndo_open		= sim_ndo_open,
	.ndo_stop		= sim_ndo_stop,
	.ndo_start_xmit		= sim_ndo_start_xmit,
	.ndo_eth_ioctl		= phy_do_ioctl,
	.ndo_set_mac_address	= eth_mac_addr,
	.ndo_validate_addr	= eth_validate_addr,
};

static const struct ethtool_ops sim_ethtool_ops = {
	.get_link		= ethtool_op_get_link,
	.get_link_ksettings	= phy_ethtool_get_link_ksettings,
	.set_link_ksettings	= phy_ethtool_set_link_ksettings,
	.nway_reset		= phy_ethtool_nway_reset,
};

static void sim_adjust_link(struct net_device *ndev)
{
	phy_print_status(ndev->phydev);
}

/* --- MDIO load generator --- */

static void sim_load_run(struct sim_phy *p, u64 n, struct sim_load *l)
{
	struct mii_bus *bus = p->sim->bus;
	u64 i;

	for (i = 0; i < n; i++) {
		if ((l->resume ? phy_resume(p->phydev) : mdiobus_read(bus, p->addr, l->reg)) < 0)
			l->errors++;
		l->done++;
		if ((i & 1023) == 1023) {
			cond_resched();
			if (fatal_signal_pending(current))
				break;
		}
	}
}

static int sim_load_thread(void *data)
{
	struct sim_phy *p = data;
	struct sim_load *l = &p->load;
	u64 t0 = ktime_get_ns(), end = t0 + (u64)l->secs * NSEC_PER_SEC;
	u64 now, due;

	/*
	 * Every 10 ms, catch up with rate * elapsed time, in slices of at most 10 ms worth of
	 * reads so that a rate above what the bus can take ends on time: the thread then reads
	 * back to back until the end.
	 */
	while (!kthread_should_stop() && (now = ktime_get_ns()) < end) {
		due = mul_u64_u64_div_u64(l->rate, now - t0, NSEC_PER_SEC);
		if (due > l->done) {
			sim_load_run(p, min(due - l->done, max_t(u64, l->rate / 100, 1)), l);
			l->elapsed_ns = ktime_get_ns() - t0;
			if (due - l->done > l->rate / 100)
				continue;
		}
		l->elapsed_ns = ktime_get_ns() - t0;
		schedule_timeout_interruptible(msecs_to_jiffies(10));
	}
	l->elapsed_ns = ktime_get_ns() - t0;
	WRITE_ONCE(l->running, false);
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (kthread_should_stop()) {
			__set_current_state(TASK_RUNNING);
			break;
		}
		schedule();
	}
	return 0;
}

/* p->ctl held */
static void sim_load_stop(struct sim_phy *p)
{
	if (p->load.task) {
		kthread_stop(p->load.task);
		p->load.task = NULL;
	}
	p->load.running = false;
}

/* --- debugfs: parsing helpers --- */

/* Next token separated by blanks or commas, skipping empty ones; NULL at the end. */
static char *sim_tok(char **s)
{
	char *t;

	do {
		t = strsep(s, " \t,");
	} while (t && !*t);
	return t;
}

static int sim_parse_uint(const char *s, unsigned int max, unsigned int *out)
{
	unsigned int v;

	if (kstrtouint(s, 0, &v) || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* 1/0, y/n, yes/no, on/off, true/false (kstrtobool() only looks at the start). */
static int sim_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "y", "yes", "on", "true" };
	static const char *const no[] = { "0", "n", "no", "off", "false" };
	int i;

	for (i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
			*out = !strcasecmp(s, yes[i]);
			return 0;
		}
	}
	return -EINVAL;
}

/* Register by number (0..31) or name (BMSR, ...). */
static int sim_parse_reg(const char *s, int *reg)
{
	unsigned int v;
	int i;

	for (i = 0; i < SIM_NREGS; i++) {
		if (sim_reg_names[i] && !strcasecmp(s, sim_reg_names[i])) {
			*reg = i;
			return 0;
		}
	}
	if (kstrtouint(s, 0, &v) || v >= SIM_NREGS)
		return -EINVAL;
	*reg = v;
	return 0;
}

static const char *sim_reg_name(int reg)
{
	return sim_reg_names[reg] ? sim_reg_names[reg] : "-";
}

static const char *sim_state_name(enum phy_state st)
{
	switch (st) {
	case PHY_DOWN: return "DOWN";
	case PHY_READY: return "READY";
	case PHY_HALTED: return "HALTED";
	case PHY_ERROR: return "ERROR";
	case PHY_UP: return "UP";
	case PHY_RUNNING: return "RUNNING";
	case PHY_NOLINK: return "NOLINK";
	case PHY_CABLETEST: return "CABLETEST";
	}
	return "UNKNOWN";
}

static void sim_show_modes(struct seq_file *m, u16 modes)
{
	static const struct { u16 bit; const char *name; } names[] = {
		{ ADVERTISE_100FULL, "100full" }, { ADVERTISE_100HALF, "100half" },
		{ ADVERTISE_10FULL, "10full" }, { ADVERTISE_10HALF, "10half" },
		{ ADVERTISE_PAUSE_CAP, "pause" }, { ADVERTISE_PAUSE_ASYM, "asym" },
	};
	bool any = false;
	int i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (modes & names[i].bit) {
			seq_printf(m, "%s%s", any ? " " : "", names[i].name);
			any = true;
		}
	}
	seq_printf(m, "%s (0x%04x)\n", any ? "" : "none", modes);
}

/* --- debugfs: per-PHY files --- */

static int sim_info_show(struct seq_file *m, struct sim_phy *p)
{
	struct phy_device *phydev = p->phydev;
	bool up, link, an_done;
	int speed, duplex;
	const char *drv;
	u16 mode;
	enum phy_state st;

	spin_lock(&p->lock);
	up = sim_sync(p, ktime_get(), &mode);
	spin_unlock(&p->lock);

	mutex_lock(&phydev->lock);
	st = phydev->state;
	link = phydev->link;
	an_done = phydev->autoneg_complete;
	speed = phydev->speed;
	duplex = phydev->duplex;
	drv = phydev->drv ? phydev->drv->name : "none";
	mutex_unlock(&phydev->lock);

	seq_printf(m, "netdev: %s\n", netdev_name(p->ndev));
	seq_printf(m, "model: %s\n", p->model->name);
	seq_printf(m, "phy_id: 0x%08x\n", p->model->id);
	seq_printf(m, "addr: %d\n", p->addr);
	seq_printf(m, "mdio_device: %s\n", phydev_name(phydev));
	seq_printf(m, "driver: %s\n", drv);
	seq_printf(m, "state: %s\n", sim_state_name(st));
	seq_printf(m, "phy_link: %d\n", link);
	seq_printf(m, "phy_autoneg_complete: %d\n", an_done);
	seq_printf(m, "phy_speed: %d\n", speed);
	seq_printf(m, "phy_duplex: %s\n", duplex == DUPLEX_FULL ? "full" :
		   duplex == DUPLEX_HALF ? "half" : "unknown");
	seq_printf(m, "carrier: %d\n", netif_carrier_ok(p->ndev));
	seq_printf(m, "sim_link: %d\n", up);
	seq_printf(m, "sim_mode: %s\n", !up ? "none" : p->model->c45 ? "10000full" :
		   mode == ADVERTISE_100FULL ? "100full" :
		   mode == ADVERTISE_100HALF ? "100half" :
		   mode == ADVERTISE_10FULL ? "10full" : "10half");
	return 0;
}

/* A Clause 45 PHY's registers: the standard ones of each MMD, then every other one written. */
static int sim_c45_regs_show(struct seq_file *m, struct sim_phy *p)
{
	static const u16 standard[] = { MDIO_CTRL1, MDIO_STAT1, MII_PHYSID1, MII_PHYSID2,
					MDIO_SPEED, MDIO_DEVS1, MDIO_DEVS2, MDIO_CTRL2, MDIO_STAT2 };
	static const u8 mmds[] = { MDIO_MMD_PMAPMD, MDIO_MMD_PCS, MDIO_MMD_PHYXS };
	int i, j;

	spin_lock(&p->lock);
	for (i = 0; i < ARRAY_SIZE(mmds); i++)
		for (j = 0; j < ARRAY_SIZE(standard); j++)
			seq_printf(m, "%d.0x%04x 0x%04x\n", mmds[i], standard[j],
				   sim_c45_reg_read(p, mmds[i], standard[j], true));
	seq_printf(m, "1.0x%04x 0x%04x\n", QT2025_HW_REV,
		   sim_c45_reg_read(p, MDIO_MMD_PMAPMD, QT2025_HW_REV, true));
	seq_printf(m, "3.0x%04x 0x%04x\n", MDIO_PCS_10GBRT_STAT1,
		   sim_c45_reg_read(p, MDIO_MMD_PCS, MDIO_PCS_10GBRT_STAT1, true));
	seq_printf(m, "4.0x%04x 0x%04x\n", MDIO_PHYXS_LNSTAT,
		   sim_c45_reg_read(p, MDIO_MMD_PHYXS, MDIO_PHYXS_LNSTAT, true));
	for (i = 0; i < p->c45->nregs; i++) {
		struct sim_c45_reg *r = &p->c45->regs[i];

		if (r->writes && r->reg > MDIO_STAT2)
			seq_printf(m, "%d.0x%04x 0x%04x\n", r->devad, r->reg, r->val);
	}
	spin_unlock(&p->lock);
	return 0;
}

static int sim_regs_show(struct seq_file *m, struct sim_phy *p)
{
	u16 v[SIM_NREGS];
	int i;

	if (p->model->c45)
		return sim_c45_regs_show(m, p);
	spin_lock(&p->lock);
	for (i = 0; i < SIM_NREGS; i++)
		v[i] = sim_reg_read(p, i, true);
	spin_unlock(&p->lock);
	for (i = 0; i < SIM_NREGS; i++)
		if (i < 16 || v[i])
			seq_printf(m, "0x%02x %-10s 0x%04x\n", i, sim_reg_name(i), v[i]);
	return 0;
}

static int sim_cable_show(struct seq_file *m, struct sim_phy *p)
{
	seq_printf(m, "%d\n", READ_ONCE(p->plugged));
	return 0;
}

static int sim_cable_store(struct sim_phy *p, char *buf)
{
	bool v;

	if (!strcmp(buf, "plug"))
		v = true;
	else if (!strcmp(buf, "unplug"))
		v = false;
	else if (sim_parse_bool(buf, &v))
		return -EINVAL;
	spin_lock(&p->lock);
	if (v != p->plugged) {
		p->plugged = v;
		sim_retrain(p, ktime_get());
	}
	spin_unlock(&p->lock);
	sim_kick(p);
	return 0;
}

static int sim_partner_show(struct seq_file *m, struct sim_phy *p)
{
	sim_show_modes(m, READ_ONCE(p->partner));
	return 0;
}

static int sim_partner_store(struct sim_phy *p, char *buf)
{
	u16 modes = 0;
	unsigned int v;
	char *tok;

	while ((tok = sim_tok(&buf)) != NULL) {
		if (!strcmp(tok, "100full"))
			modes |= ADVERTISE_100FULL;
		else if (!strcmp(tok, "100half"))
			modes |= ADVERTISE_100HALF;
		else if (!strcmp(tok, "10full"))
			modes |= ADVERTISE_10FULL;
		else if (!strcmp(tok, "10half"))
			modes |= ADVERTISE_10HALF;
		else if (!strcmp(tok, "all"))
			modes |= ADVERTISE_ALL;
		else if (!strcmp(tok, "pause"))
			modes |= ADVERTISE_PAUSE_CAP;
		else if (!strcmp(tok, "asym"))
			modes |= ADVERTISE_PAUSE_ASYM;
		else if (!strcmp(tok, "none"))
			;
		else if (!kstrtouint(tok, 0, &v) && !(v & ~SIM_PARTNER_RW))
			modes |= v;
		else
			return -EINVAL;
	}
	spin_lock(&p->lock);
	if (modes != p->partner) {
		p->partner = modes;
		sim_retrain(p, ktime_get());
	}
	spin_unlock(&p->lock);
	sim_kick(p);
	return 0;
}

#define SIM_UINT_ATTR(field, max)						\
static int sim_##field##_show(struct seq_file *m, struct sim_phy *p)	\
{									\
	seq_printf(m, "%u\n", READ_ONCE(p->field));			\
	return 0;							\
}									\
static int sim_##field##_store(struct sim_phy *p, char *buf)		\
{									\
	unsigned int v;							\
									\
	if (sim_parse_uint(buf, max, &v))				\
		return -EINVAL;						\
	spin_lock(&p->lock);						\
	p->field = v;							\
	spin_unlock(&p->lock);						\
	return 0;							\
}

SIM_UINT_ATTR(aneg_delay_ms, 60000)
SIM_UINT_ATTR(reset_delay_ms, 5000)
SIM_UINT_ATTR(mdio_delay_us, 1000000)

#define SIM_BOOL_ATTR(field)						\
static int sim_##field##_show(struct seq_file *m, struct sim_phy *p)	\
{									\
	seq_printf(m, "%d\n", READ_ONCE(p->field));			\
	return 0;							\
}									\
static int sim_##field##_store(struct sim_phy *p, char *buf)		\
{									\
	bool v;								\
									\
	if (sim_parse_bool(buf, &v))					\
		return -EINVAL;						\
	spin_lock(&p->lock);						\
	p->field = v;							\
	spin_unlock(&p->lock);						\
	return 0;							\
}

SIM_BOOL_ATTR(lpa_zero)
SIM_BOOL_ATTR(reset_needs_toggle)
SIM_BOOL_ATTR(kick)

static int sim_inject_show(struct seq_file *m, struct sim_phy *p)
{
	struct sim_inject inj[SIM_NREGS];
	bool any = false;
	int i;

	spin_lock(&p->lock);
	memcpy(inj, p->inj, sizeof(inj));
	spin_unlock(&p->lock);
	for (i = 0; i < SIM_NREGS; i++) {
		if (!inj[i].err || !inj[i].count)
			continue;
		any = true;
		seq_printf(m, "0x%02x %-10s errno=%d ops=%s%s left=", i, sim_reg_name(i),
			   -inj[i].err, inj[i].rd ? "r" : "", inj[i].wr ? "w" : "");
		if (inj[i].count == UINT_MAX)
			seq_puts(m, "forever\n");
		else
			seq_printf(m, "%u\n", inj[i].count);
	}
	for (i = 0; p->c45 && i < SIM_C45_RULES; i++) {
		struct sim_c45_rule rule;

		spin_lock(&p->lock);
		rule = p->c45->rules[i];
		spin_unlock(&p->lock);
		if (!rule.in.err || !rule.in.count)
			continue;
		any = true;
		seq_printf(m, "%d.0x%04x errno=%d ops=%s%s left=", rule.devad, rule.reg,
			   -rule.in.err, rule.in.rd ? "r" : "", rule.in.wr ? "w" : "");
		if (rule.in.count == UINT_MAX)
			seq_puts(m, "forever\n");
		else
			seq_printf(m, "%u\n", rule.in.count);
	}
	if (!any)
		seq_puts(m, "none\n");
	return 0;
}

/* The rule for DEVAD.REG replaces the one there was, or takes a free slot. */
static int sim_c45_rule_set(struct sim_phy *p, int devad, u16 reg, const struct sim_inject *in)
{
	struct sim_c45_rule *rules = p->c45->rules, *free = NULL;
	int i;

	for (i = 0; i < SIM_C45_RULES; i++) {
		if (rules[i].in.err && rules[i].devad == devad && rules[i].reg == reg) {
			free = &rules[i];
			break;
		}
		if ((!rules[i].in.err || !rules[i].in.count) && !free)
			free = &rules[i];
	}
	if (!free)
		return -ENOSPC;
	*free = (struct sim_c45_rule){ .devad = devad, .reg = reg, .in = *in };
	return 0;
}

/* "REG ERRNO COUNT [r|w|rw]" (REG: a Clause 22 register, or DEVAD.REG) or "clear" */
static int sim_inject_store(struct sim_phy *p, char *buf)
{
	char *reg_s, *err_s, *cnt_s, *ops_s;
	struct sim_inject in = { .rd = true };
	unsigned int count;
	int reg = 0, err, ret = 0;

	unsigned int devad = 0, c45_reg = 0;
	char *dot;

	if (sysfs_streq(buf, "clear")) {
		spin_lock(&p->lock);
		memset(p->inj, 0, sizeof(p->inj));
		if (p->c45)
			memset(p->c45->rules, 0, sizeof(p->c45->rules));
		spin_unlock(&p->lock);
		return 0;
	}
	reg_s = sim_tok(&buf);
	err_s = sim_tok(&buf);
	cnt_s = sim_tok(&buf);
	ops_s = sim_tok(&buf);
	if (!reg_s || !err_s || !cnt_s || sim_tok(&buf))
		return -EINVAL;
	/* Clause 45: DEVAD.REG, on a Clause 45 PHY only. */
	dot = strchr(reg_s, '.');
	if (dot) {
		*dot = '\0';
		if (!p->c45 || sim_parse_uint(reg_s, 31, &devad) ||
		    sim_parse_uint(dot + 1, 0xffff, &c45_reg))
			return -EINVAL;
	} else if (sim_parse_reg(reg_s, &reg)) {
		return -EINVAL;
	}
	if (kstrtoint(err_s, 0, &err) || err == 0 || abs(err) >= MAX_ERRNO)
		return -EINVAL;
	if (!strcmp(cnt_s, "forever") || !strcmp(cnt_s, "-1"))
		count = UINT_MAX;
	else if (kstrtouint(cnt_s, 0, &count) || count == UINT_MAX)
		return -EINVAL;
	if (ops_s) {
		if (!strcmp(ops_s, "r"))
			in = (struct sim_inject){ .rd = true };
		else if (!strcmp(ops_s, "w"))
			in = (struct sim_inject){ .wr = true };
		else if (!strcmp(ops_s, "rw"))
			in = (struct sim_inject){ .rd = true, .wr = true };
		else
			return -EINVAL;
	}
	in.err = -abs(err);
	in.count = count;
	spin_lock(&p->lock);
	if (dot)
		ret = sim_c45_rule_set(p, devad, c45_reg, &in);
	else
		p->inj[reg] = in;
	spin_unlock(&p->lock);
	return ret;
}

/*
 * Clause 45 counters, a line per register ("c45 DEVAD.0xREG reads writes rd_err wr_err"), per
 * SRAM half ("sram DEVAD.0xFIRST-0xLAST ...") and beyond the table ("c45_other reads writes").
 */
static void sim_c45_counters_print(struct seq_file *m, struct sim_phy *p)
{
	struct sim_c45 *c = p->c45;
	int i;

	spin_lock(&p->lock);
	for (i = 0; i < c->nregs; i++) {
		struct sim_c45_reg *r = &c->regs[i];

		if (r->reads || r->writes)
			seq_printf(m, "c45 %d.0x%04x %llu %llu %llu %llu\n", r->devad, r->reg,
				   r->reads, r->writes, r->rd_err, r->wr_err);
	}
	seq_printf(m, "sram 3.0x%04x-0x%04x %llu %llu %llu %llu\n", QT2025_SRAM_BASE,
		   QT2025_SRAM_BASE + QT2025_SRAM_PCS - 1, c->sram_reads[0], c->sram_writes[0],
		   c->sram_rd_err[0], c->sram_wr_err[0]);
	seq_printf(m, "sram 4.0x%04x-0x%04x %llu %llu %llu %llu\n", QT2025_SRAM_BASE,
		   QT2025_SRAM_BASE + QT2025_SRAM_XS - 1, c->sram_reads[1], c->sram_writes[1],
		   c->sram_rd_err[1], c->sram_wr_err[1]);
	seq_printf(m, "c45_other %llu %llu\n", c->other_reads, c->other_writes);
	spin_unlock(&p->lock);
}

static void sim_counters_print(struct seq_file *m, struct sim_phy *p)
{
	struct sim_counters c;
	u64 r = 0, w = 0;
	int i;

	spin_lock(&p->lock);
	c = p->cnt;
	spin_unlock(&p->lock);
	seq_printf(m, "%-5s%-11s%10s%10s%10s%10s\n",
		   "reg", "name", "reads", "writes", "rd_err", "wr_err");
	for (i = 0; i < SIM_NREGS; i++) {
		r += c.reads[i];
		w += c.writes[i];
		seq_printf(m, "0x%02x %-10s %9llu %9llu %9llu %9llu\n", i, sim_reg_name(i),
			   c.reads[i], c.writes[i], c.rd_err[i], c.wr_err[i]);
	}
	if (p->model->c45)
		sim_c45_counters_print(m, p);
	seq_printf(m, "total_reads %llu\n", r);
	seq_printf(m, "total_writes %llu\n", w);
	seq_printf(m, "resets %llu\n", c.resets);
	seq_printf(m, "resets_ignored %llu\n", c.resets_ignored);
	seq_printf(m, "aneg_restarts %llu\n", c.aneg_restarts);
}

static int sim_counters_show(struct seq_file *m, struct sim_phy *p)
{
	sim_counters_print(m, p);
	return 0;
}

static void sim_counters_reset(struct sim_phy *p)
{
	struct sim_c45 *c = p->c45;
	int i;

	spin_lock(&p->lock);
	memset(&p->cnt, 0, sizeof(p->cnt));
	if (c) {
		for (i = 0; i < c->nregs; i++)
			c->regs[i].reads = c->regs[i].writes = c->regs[i].rd_err =
				c->regs[i].wr_err = 0;
		memset(c->sram_reads, 0, sizeof(c->sram_reads));
		memset(c->sram_writes, 0, sizeof(c->sram_writes));
		memset(c->sram_rd_err, 0, sizeof(c->sram_rd_err));
		memset(c->sram_wr_err, 0, sizeof(c->sram_wr_err));
		c->other_reads = c->other_writes = 0;
	}
	spin_unlock(&p->lock);
}

static int sim_counters_store(struct sim_phy *p, char *buf)
{
	if (!sysfs_streq(buf, "0") && !sysfs_streq(buf, "reset"))
		return -EINVAL;
	sim_counters_reset(p);
	return 0;
}

static int sim_load_show(struct seq_file *m, struct sim_phy *p)
{
	struct sim_load l;
	u64 per;

	mutex_lock(&p->ctl);
	l = p->load;
	mutex_unlock(&p->ctl);
	per = l.done ? div64_u64(l.elapsed_ns, l.done) : 0;
	seq_printf(m, "mode=%s running=%d reg=%d rate=%u secs=%u reads=%llu errors=%llu elapsed_ns=%llu ns_per_read=%llu\n",
		   l.threaded ? "rate" : l.resume ? "resume" : "sync", READ_ONCE(p->load.running), l.reg,
		   l.rate, l.secs, l.done, l.errors, l.elapsed_ns, per);
	return 0;
}

/*
 * "N [REG]": N reads now; "rate R SECS [REG]": R reads/s for SECS s; "resume N": N calls of
 * phy_resume() now (each calls the driver's resume through phylib); "stop"
 */
static int sim_load_store(struct sim_phy *p, char *buf)
{
	char *a = sim_tok(&buf), *b = sim_tok(&buf), *c = sim_tok(&buf);
	unsigned int n, rate, secs;
	int reg = MII_BMSR;
	struct task_struct *t;
	bool resume;
	u64 t0;

	if (!a)
		return -EINVAL;
	if (!strcmp(a, "stop")) {
		mutex_lock(&p->ctl);
		sim_load_stop(p);
		mutex_unlock(&p->ctl);
		return 0;
	}
	if (!strcmp(a, "rate")) {
		if (!b || !c || sim_parse_uint(b, 10000000, &rate) || !rate ||
		    sim_parse_uint(c, 3600, &secs) || !secs)
			return -EINVAL;
		a = sim_tok(&buf);
		if ((a && sim_parse_reg(a, &reg)) || sim_tok(&buf))
			return -EINVAL;
		mutex_lock(&p->ctl);
		sim_load_stop(p);
		p->load = (struct sim_load){ .threaded = true, .running = true,
					     .reg = reg, .rate = rate, .secs = secs };
		t = kthread_run(sim_load_thread, p, "phy_sim_load/%d", p->addr);
		if (IS_ERR(t)) {
			p->load.running = false;
			mutex_unlock(&p->ctl);
			return PTR_ERR(t);
		}
		p->load.task = t;
		mutex_unlock(&p->ctl);
		return 0;
	}
	resume = !strcmp(a, "resume");
	if (resume) {
		a = b;
		b = NULL;
	}
	if (c || !a || sim_parse_uint(a, 100000000, &n) || !n || (b && sim_parse_reg(b, &reg)))
		return -EINVAL;
	mutex_lock(&p->ctl);
	sim_load_stop(p);
	p->load = (struct sim_load){ .reg = reg, .resume = resume };
	t0 = ktime_get_ns();
	sim_load_run(p, n, &p->load);
	p->load.elapsed_ns = ktime_get_ns() - t0;
	mutex_unlock(&p->ctl);
	return 0;
}

static const struct sim_attr sim_attrs[SIM_NATTRS] = {
	{ "info", 0444, sim_info_show, NULL, NULL },
	{ "regs", 0444, sim_regs_show, NULL, NULL },
	{ "cable", 0644, sim_cable_show, sim_cable_store,
	  "1|0|plug|unplug" },
	{ "partner", 0644, sim_partner_show, sim_partner_store,
	  "a list of 100full 100half 10full 10half pause asym all none, or ADVERTISE bits (e.g. 0x1e0)" },
	{ "aneg_delay_ms", 0644, sim_aneg_delay_ms_show, sim_aneg_delay_ms_store,
	  "milliseconds, 0..60000" },
	{ "reset_delay_ms", 0644, sim_reset_delay_ms_show, sim_reset_delay_ms_store,
	  "milliseconds, 0..5000" },
	{ "mdio_delay_us", 0644, sim_mdio_delay_us_show, sim_mdio_delay_us_store,
	  "microseconds each access sleeps, 0..1000000" },
	{ "lpa_zero", 0644, sim_lpa_zero_show, sim_lpa_zero_store, "1|0" },
	{ "reset_needs_toggle", 0644, sim_reset_needs_toggle_show,
	  sim_reset_needs_toggle_store, "1|0" },
	{ "kick", 0644, sim_kick_show, sim_kick_store, "1|0" },
	{ "inject", 0644, sim_inject_show, sim_inject_store,
	  "\"REG ERRNO COUNT [r|w|rw]\" (REG: 0..31, a name such as BMSR, or DEVAD.REG on a Clause 45 PHY such as 1.0xd001; COUNT: a number or forever) or \"clear\"" },
	{ "counters", 0644, sim_counters_show, sim_counters_store, "0|reset" },
	{ "load", 0644, sim_load_show, sim_load_store,
	  "\"N [REG]\" (N reads now), \"rate R SECS [REG]\" (R reads/s in a kernel thread), \"resume N\" (N phy_resume() calls now) or \"stop\"" },
};

/* --- debugfs: plumbing --- */

static int sim_global_counters_show(struct seq_file *m, struct sim *sim)
{
	int i;

	for (i = 0; i < sim->nphys; i++) {
		struct sim_phy *p = sim->phy[i];

		seq_printf(m, "[%s] addr=%d model=%s\n", netdev_name(p->ndev),
			   p->addr, p->model->name);
		sim_counters_print(m, p);
	}
	return 0;
}

static struct sim *sim_global;

static int sim_seq_show(struct seq_file *m, void *v)
{
	struct sim_file *f = m->private;

	if (!f->p)
		return sim_global_counters_show(m, sim_global);
	return f->a->show(m, f->p);
}

static int sim_file_open(struct inode *inode, struct file *file)
{
	return single_open(file, sim_seq_show, inode->i_private);
}

static ssize_t sim_file_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *ppos)
{
	struct sim_file *f = ((struct seq_file *)file->private_data)->private;
	const char *where = f->p ? netdev_name(f->p->ndev) : "";
	const char *name = f->p ? f->a->name : "counters";
	char buf[128], *s;
	int ret, i;

	if (len >= sizeof(buf)) {
		pr_warn("%s/%s: invalid input (%zu bytes, at most %zu)\n",
			where, name, len, sizeof(buf) - 1);
		return -EINVAL;
	}
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	s = strim(buf);
	if (!f->p) {
		if (!sysfs_streq(s, "0") && !sysfs_streq(s, "reset")) {
			pr_warn("counters: invalid input \"%s\", expected 0|reset\n", s);
			return -EINVAL;
		}
		for (i = 0; i < sim_global->nphys; i++)
			sim_counters_reset(sim_global->phy[i]);
		return len;
	}
	if (!f->a->store)
		return -EPERM;
	{
		char copy[128];

		strscpy(copy, s, sizeof(copy));
		ret = f->a->store(f->p, s);
		if (ret == -EINVAL)
			pr_warn("%s/%s: invalid input \"%s\", expected %s\n",
				where, name, copy, f->a->usage);
	}
	return ret ? ret : len;
}

static const struct file_operations sim_fops = {
	.owner		= THIS_MODULE,
	.open		= sim_file_open,
	.read		= seq_read,
	.llseek		= seq_lseek,
	.release	= single_release,
	.write		= sim_file_write,
};

static void sim_debugfs_init(struct sim *sim)
{
	char name[16];
	int i, j;

	sim->root = debugfs_create_dir("phy_sim", NULL);
	sim->gfile = (struct sim_file){ .p = NULL, .a = NULL };
	debugfs_create_file("counters", 0644, sim->root, &sim->gfile, &sim_fops);
	for (i = 0; i < sim->nphys; i++) {
		struct sim_phy *p = sim->phy[i];

		p->dir = debugfs_create_dir(netdev_name(p->ndev), sim->root);
		for (j = 0; j < SIM_NATTRS; j++) {
			p->files[j] = (struct sim_file){ .p = p, .a = &sim_attrs[j] };
			debugfs_create_file(sim_attrs[j].name, sim_attrs[j].mode,
					    p->dir, &p->files[j], &sim_fops);
		}
		if (p->c45) {
			/* The CPU SRAM as the firmware load left it, byte for byte. */
			p->c45->sram_blob.data = p->c45->sram;
			p->c45->sram_blob.size = sizeof(p->c45->sram);
			debugfs_create_blob("sram", 0444, p->dir, &p->c45->sram_blob);
		}
		snprintf(name, sizeof(name), "addr%d", p->addr);
		debugfs_create_symlink(name, sim->root, netdev_name(p->ndev));
	}
}

/* --- setup and teardown --- */

static int sim_parse_phys(struct sim *sim, struct device *dev)
{
	char *list, *cur, *tok, *at;
	unsigned int addr;
	int i, ret = 0;

	list = kstrdup(phys, GFP_KERNEL);
	if (!list)
		return -ENOMEM;
	cur = list;
	while ((tok = strsep(&cur, ",")) != NULL) {
		const struct sim_model *model = NULL;
		struct sim_phy *p;

		tok = strim(tok);
		if (!*tok)
			continue;
		at = strpbrk(tok, "@:");
		if (!at) {
			ret = -EINVAL;
			break;
		}
		*at++ = '\0';
		for (i = 0; i < ARRAY_SIZE(sim_models); i++)
			if (!strcasecmp(tok, sim_models[i].key) ||
			    !strcasecmp(tok, sim_models[i].key + 2))
				model = &sim_models[i];
		if (!model || kstrtouint(at, 0, &addr) || addr >= PHY_MAX_ADDR ||
		    sim->by_addr[addr] || sim->nphys == SIM_MAX_PHYS) {
			ret = -EINVAL;
			break;
		}
		p = devm_kzalloc(dev, sizeof(*p), GFP_KERNEL);
		if (!p) {
			ret = -ENOMEM;
			break;
		}
		p->sim = sim;
		p->addr = addr;
		p->model = model;
		if (model->c45) {
			p->c45 = devm_kzalloc(dev, sizeof(*p->c45), GFP_KERNEL);
			if (!p->c45) {
				ret = -ENOMEM;
				break;
			}
			sim_c45_defaults(p);
		}
		spin_lock_init(&p->lock);
		mutex_init(&p->ctl);
		INIT_DELAYED_WORK(&p->kick_work, sim_kick_work);
		sim_defaults(p);
		p->lfail = true;
		p->plugged = cable;
		p->partner = ADVERTISE_ALL;
		p->aneg_delay_ms = aneg_delay_ms;
		p->reset_delay_ms = reset_delay_ms;
		p->reset_needs_toggle = true;
		p->kick = true;
		p->train_start = ktime_get();
		sim->by_addr[addr] = p;
		sim->phy[sim->nphys++] = p;
	}
	kfree(list);
	if (!ret && !sim->nphys)
		ret = -EINVAL;
	if (ret == -EINVAL)
		pr_err("invalid phys=\"%s\": expected MODEL@ADDR[,MODEL@ADDR...] with MODEL ax88772a|ax88772c|ax88796b|qt2025, ADDR 0..31 unique, at most %d PHYs\n",
		       phys, SIM_MAX_PHYS);
	return ret;
}

static void sim_teardown(struct sim *sim)
{
	int i;

	/* No control can run past this: debugfs waits for open handlers. */
	debugfs_remove_recursive(sim->root);
	sim->root = NULL;
	for (i = 0; i < sim->nphys; i++) {
		struct sim_phy *p = sim->phy[i];

		mutex_lock(&p->ctl);
		sim_load_stop(p);
		mutex_unlock(&p->ctl);
		spin_lock(&p->lock);
		p->dying = true;
		spin_unlock(&p->lock);
		cancel_delayed_work_sync(&p->kick_work);
	}
	for (i = sim->nphys - 1; i >= 0; i--) {
		struct sim_phy *p = sim->phy[i];

		if (!p->ndev)
			continue;
		if (p->connected) {
			/* Close first: phy_stop() from ndo_stop, then detach
			 * while the netdev's sysfs links still exist.
			 */
			rtnl_lock();
			dev_close(p->ndev);
			rtnl_unlock();
			phy_disconnect(p->phydev);
			p->connected = false;
		}
		unregister_netdev(p->ndev);
		free_netdev(p->ndev);
		p->ndev = NULL;
	}
	if (sim->bus) {
		mdiobus_unregister(sim->bus);
		mdiobus_free(sim->bus);
		sim->bus = NULL;
	}
}

static int sim_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct sim *sim;
	int i, ret;

	sim = devm_kzalloc(dev, sizeof(*sim), GFP_KERNEL);
	if (!sim)
		return -ENOMEM;
	sim->pdev = pdev;
	ret = sim_parse_phys(sim, dev);
	if (ret)
		return ret;

	sim->bus = mdiobus_alloc();
	if (!sim->bus)
		return -ENOMEM;
	sim->bus->name = "phy_sim";
	snprintf(sim->bus->id, MII_BUS_ID_SIZE, "phy_sim-0");
	sim->bus->read = sim_mdio_read;
	sim->bus->write = sim_mdio_write;
	sim->bus->read_c45 = sim_mdio_read_c45;
	sim->bus->write_c45 = sim_mdio_write_c45;
	sim->bus->priv = sim;
	sim->bus->parent = dev;
	sim->bus->phy_mask = ~0U;
	for (i = 0; i < sim->nphys; i++)
		sim->bus->phy_mask &= ~BIT(sim->phy[i]->addr);
	ret = mdiobus_register(sim->bus);
	if (ret) {
		mdiobus_free(sim->bus);
		sim->bus = NULL;
		return ret;
	}

	for (i = 0; i < sim->nphys; i++) {
		struct sim_phy *p = sim->phy[i];
		struct net_device *ndev;

		p->phydev = mdiobus_get_phy(sim->bus, p->addr);
		if (!p->phydev) {
			dev_err(dev, "no PHY found at address %d\n", p->addr);
			ret = -ENODEV;
			goto err;
		}
		ndev = alloc_netdev(sizeof(struct sim_priv), "sim%d",
				    NET_NAME_ENUM, ether_setup);
		if (!ndev) {
			ret = -ENOMEM;
			goto err;
		}
		((struct sim_priv *)netdev_priv(ndev))->p = p;
		SET_NETDEV_DEV(ndev, dev);
		ndev->netdev_ops = &sim_netdev_ops;
		ndev->ethtool_ops = &sim_ethtool_ops;
		eth_hw_addr_random(ndev);
		ret = register_netdev(ndev);
		if (ret) {
			free_netdev(ndev);
			goto err;
		}
		p->ndev = ndev;
		ret = phy_connect_direct(ndev, p->phydev, sim_adjust_link,
					 PHY_INTERFACE_MODE_MII);
		if (ret) {
			netdev_err(ndev, "phy_connect_direct failed: %d\n", ret);
			goto err;
		}
		p->connected = true;
		phy_attached_info(p->phydev);
	}

	sim_global = sim;
	sim_debugfs_init(sim);
	platform_set_drvdata(pdev, sim);
	dev_info(dev, "%d simulated PHY(s) on MDIO bus %s\n", sim->nphys, sim->bus->id);
	return 0;

err:
	sim_teardown(sim);
	return ret;
}

static void sim_remove(struct platform_device *pdev)
{
	struct sim *sim = platform_get_drvdata(pdev);

	sim_teardown(sim);
	sim_global = NULL;
}

static struct platform_driver sim_driver = {
	.probe	= sim_probe,
	.remove	= sim_remove,
	.driver	= {
		.name = "phy_sim",
	},
};

static struct platform_device *sim_pdev;

static int __init sim_init(void)
{
	int ret;

	ret = platform_driver_register(&sim_driver);
	if (ret)
		return ret;
	sim_pdev = platform_device_register_simple("phy_sim", PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(sim_pdev)) {
		platform_driver_unregister(&sim_driver);
		return PTR_ERR(sim_pdev);
	}
	if (!platform_get_drvdata(sim_pdev)) {
		/* probe failed: its error is in the log */
		platform_device_unregister(sim_pdev);
		platform_driver_unregister(&sim_driver);
		return -ENODEV;
	}
	return 0;
}

static void __exit sim_exit(void)
{
	platform_device_unregister(sim_pdev);
	platform_driver_unregister(&sim_driver);
}

module_init(sim_init);
module_exit(sim_exit);

MODULE_DESCRIPTION("Simulated MDIO bus with Asix PHYs and a Clause 45 QT2025, for phytrace");
MODULE_AUTHOR("phytrace developers");
MODULE_LICENSE("GPL");
