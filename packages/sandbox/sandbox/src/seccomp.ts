/**
 * The seccomp filter every confined command runs under, as a classic BPF
 * program in the binary form `bwrap --seccomp <fd>` reads (an array of
 * `struct sock_filter`, native byte order). Built here from syscall tables,
 * so no package or download is needed.
 *
 * The filter answers EPERM to the calls that change mounts, namespaces or the
 * kernel, that inspect other processes, and to `socket(AF_UNIX, …)` (host Unix
 * sockets are the way out of every other fence); `socketpair` stays allowed.
 * `clone` with a namespace flag is EPERM, `clone3` is ENOSYS (its flags live in
 * memory a filter cannot read; libc then falls back to `clone`). A call from
 * another ABI than the one the filter was built for (i386 via `int 0x80`, x32)
 * kills the process.
 */

/** What a filter is built for: the machine (`process.arch` names) and its syscall numbers. */
export interface SeccompArchitecture {
  /** `AUDIT_ARCH_*`, as the kernel reports it in `seccomp_data.arch`. */
  auditArch: number
  /** Syscall numbers by name, for the calls the filter names. */
  syscalls: Readonly<Record<DeniedSyscall | CheckedSyscall, number>>
  /** Numbers at or above this belong to another ABI on the same arch (x32 on x86_64). */
  foreignAbiFrom?: number
}

/** Calls refused outright. */
export const DENIED_SYSCALLS = [
  'mount',
  'umount2',
  'pivot_root',
  'chroot',
  'move_mount',
  'open_tree',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
  'unshare',
  'setns',
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'kexec_load',
  'kexec_file_load',
  'bpf',
  'perf_event_open',
  'userfaultfd',
  'keyctl',
  'add_key',
  'request_key',
  'io_uring_setup',
  'io_uring_enter',
  'io_uring_register',
  'init_module',
  'finit_module',
  'delete_module',
  'name_to_handle_at',
  'open_by_handle_at',
  'swapon',
  'swapoff',
  'reboot',
  'acct',
  'quotactl',
  'quotactl_fd',
  'syslog',
  'settimeofday',
  'clock_settime',
  'adjtimex',
  'clock_adjtime',
] as const
export type DeniedSyscall = (typeof DENIED_SYSCALLS)[number]

/** Calls allowed or refused by their arguments. */
type CheckedSyscall = 'socket' | 'clone' | 'clone3' | 'ioctl'

/** Calls added since Linux 5.1 have one number on every architecture (the unified syscall table). */
const UNIFIED_SYSCALLS = {
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  clone3: 435,
  mount_setattr: 442,
  quotactl_fd: 443,
} as const

/** Architectures with a filter, by `process.arch`. */
export const SECCOMP_ARCHITECTURES: Readonly<Record<string, SeccompArchitecture>> = {
  x64: {
    auditArch: 0xc000003e,
    foreignAbiFrom: 0x40000000,
    syscalls: {
      ...UNIFIED_SYSCALLS,
      mount: 165,
      umount2: 166,
      pivot_root: 155,
      chroot: 161,
      unshare: 272,
      setns: 308,
      ptrace: 101,
      process_vm_readv: 310,
      process_vm_writev: 311,
      kexec_load: 246,
      kexec_file_load: 320,
      bpf: 321,
      perf_event_open: 298,
      userfaultfd: 323,
      keyctl: 250,
      add_key: 248,
      request_key: 249,
      init_module: 175,
      finit_module: 313,
      delete_module: 176,
      name_to_handle_at: 303,
      open_by_handle_at: 304,
      swapon: 167,
      swapoff: 168,
      reboot: 169,
      acct: 163,
      quotactl: 179,
      syslog: 103,
      settimeofday: 164,
      clock_settime: 227,
      adjtimex: 159,
      clock_adjtime: 305,
      socket: 41,
      clone: 56,
      ioctl: 16,
    },
  },
  arm64: {
    auditArch: 0xc00000b7,
    syscalls: {
      ...UNIFIED_SYSCALLS,
      mount: 40,
      umount2: 39,
      pivot_root: 41,
      chroot: 51,
      unshare: 97,
      setns: 268,
      ptrace: 117,
      process_vm_readv: 270,
      process_vm_writev: 271,
      kexec_load: 104,
      kexec_file_load: 294,
      bpf: 280,
      perf_event_open: 241,
      userfaultfd: 282,
      keyctl: 219,
      add_key: 217,
      request_key: 218,
      init_module: 105,
      finit_module: 273,
      delete_module: 106,
      name_to_handle_at: 264,
      open_by_handle_at: 265,
      swapon: 224,
      swapoff: 225,
      reboot: 142,
      acct: 89,
      quotactl: 60,
      syslog: 116,
      settimeofday: 170,
      clock_settime: 112,
      adjtimex: 171,
      clock_adjtime: 266,
      socket: 198,
      clone: 220,
      ioctl: 29,
    },
  },
}

const AF_UNIX = 1
const TIOCSTI = 0x5412
/** CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET and NEWTIME. */
const CLONE_NAMESPACE_FLAGS =
  0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80
const EPERM = 1
const ENOSYS = 38

const RET_ALLOW = 0x7fff0000
const RET_ERRNO = 0x00050000
const RET_KILL_PROCESS = 0x80000000

// struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6]. The low half of
// args[i] is at 16 + 8i on little-endian machines (both supported ones).
const OFFSET_NR = 0
const OFFSET_ARCH = 4
const argLow = (index: number) => 16 + 8 * index

// Classic BPF opcodes.
const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JGE_K = 0x35
const JSET_K = 0x45
const RET_K = 0x06

type Target = number | string
type Instruction = { code: number; k: number; jt?: Target; jf?: Target } | { label: string }

/** Whether this machine has a filter. */
export function seccompSupported(arch: string = process.arch): boolean {
  return Object.hasOwn(SECCOMP_ARCHITECTURES, arch)
}

/**
 * The filter for `arch` (`process.arch` names). An architecture without a
 * table throws: a confined command must not run unfiltered.
 */
export function buildSeccompFilter(arch: string = process.arch): Buffer {
  if (!seccompSupported(arch)) {
    throw new Error(
      `no seccomp filter for the ${arch} architecture (dsh has ${Object.keys(SECCOMP_ARCHITECTURES).join(' and ')}); ` +
        'confined commands cannot run here',
    )
  }
  const table = SECCOMP_ARCHITECTURES[arch] as SeccompArchitecture
  const { syscalls } = table
  const program: Instruction[] = [
    { code: LD_W_ABS, k: OFFSET_ARCH },
    { code: JEQ_K, k: table.auditArch, jt: 0, jf: 'kill' },
    { code: LD_W_ABS, k: OFFSET_NR },
  ]
  if (table.foreignAbiFrom !== undefined) program.push({ code: JGE_K, k: table.foreignAbiFrom, jt: 'kill', jf: 0 })
  for (const name of DENIED_SYSCALLS) program.push({ code: JEQ_K, k: syscalls[name], jt: 'deny', jf: 0 })
  program.push(
    { code: JEQ_K, k: syscalls.socket, jt: 'socket', jf: 0 },
    { code: JEQ_K, k: syscalls.clone, jt: 'clone', jf: 0 },
    { code: JEQ_K, k: syscalls.clone3, jt: 'nosys', jf: 0 },
    { code: JEQ_K, k: syscalls.ioctl, jt: 'ioctl', jf: 'allow' },
    { label: 'socket' },
    { code: LD_W_ABS, k: argLow(0) },
    { code: JEQ_K, k: AF_UNIX, jt: 'deny', jf: 'allow' },
    { label: 'clone' },
    { code: LD_W_ABS, k: argLow(0) },
    { code: JSET_K, k: CLONE_NAMESPACE_FLAGS, jt: 'deny', jf: 'allow' },
    { label: 'ioctl' },
    { code: LD_W_ABS, k: argLow(1) },
    { code: JEQ_K, k: TIOCSTI, jt: 'deny', jf: 'allow' },
    { label: 'allow' },
    { code: RET_K, k: RET_ALLOW },
    { label: 'deny' },
    { code: RET_K, k: RET_ERRNO | EPERM },
    { label: 'nosys' },
    { code: RET_K, k: RET_ERRNO | ENOSYS },
    { label: 'kill' },
    { code: RET_K, k: RET_KILL_PROCESS },
  )
  return assemble(program)
}

/** Lays out the program, turning label jumps into the relative offsets BPF wants. */
function assemble(program: Instruction[]): Buffer {
  const positions = new Map<string, number>()
  const instructions: Exclude<Instruction, { label: string }>[] = []
  for (const item of program) {
    if ('label' in item) positions.set(item.label, instructions.length)
    else instructions.push(item)
  }
  const out = Buffer.alloc(instructions.length * 8)
  instructions.forEach((item, index) => {
    const offset = (target: Target | undefined): number => {
      if (target === undefined) return 0
      if (typeof target === 'number') return target
      const at = positions.get(target)
      if (at === undefined) throw new Error(`seccomp: no label ${target}`)
      const jump = at - index - 1
      if (jump < 0 || jump > 255) throw new Error(`seccomp: jump to ${target} out of range`)
      return jump
    }
    const base = index * 8
    out.writeUInt16LE(item.code, base)
    out.writeUInt8(offset(item.jt), base + 2)
    out.writeUInt8(offset(item.jf), base + 3)
    out.writeUInt32LE(item.k >>> 0, base + 4)
  })
  return out
}
