//! The mount table: which mounts are local, read from `/proc/self/mountinfo`.
//!
//! A line of mountinfo is
//! `id parent major:minor root mount-point options [optional...] - type source super-options`,
//! with spaces, tabs, newlines and backslashes in paths written as octal escapes.
//! Nothing here makes a system call: [`super::watch`] reads the text, this parses it.

/// File systems whose every call the calling thread makes (lookup, `statx`, `open`,
/// `preadv2(RWF_NOWAIT)`, `close`) is answered from memory or the local block layer.
/// FUSE (and virtiofs) ask their daemon, NFS, CIFS, 9p and Ceph their server.
const LOCAL: &[&str] = &["ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "tmpfs", "ramfs"];

/// File systems whose `statx` for nothing but the mount id, with `AT_STATX_DONT_SYNC`,
/// is answered without calling out (their getattr honours the flag or has nothing to
/// ask): every local one, the kernel's own pseudo file systems, FUSE, NFS and Ceph.
/// 9p, OrangeFS, the cluster file systems (GFS2, OCFS2) and SMB (CIFS's getattr asks
/// the server after a setattr however the flag is set: a zero attribute cache time)
/// ask their server whatever the flags say, and a type not listed is treated as they are: while any
/// such mount exists, mount ids are read from `/proc/self/fdinfo` instead.
const STATX_ANSWERS_FROM_MEMORY: &[&str] = &[
    "ext2",
    "ext3",
    "ext4",
    "xfs",
    "btrfs",
    "f2fs",
    "tmpfs",
    "ramfs",
    "overlay",
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "cgroup",
    "cgroup2",
    "mqueue",
    "debugfs",
    "tracefs",
    "securityfs",
    "pstore",
    "bpf",
    "hugetlbfs",
    "configfs",
    "fusectl",
    "binfmt_misc",
    "autofs",
    "nsfs",
    "efivarfs",
    "rpc_pipefs",
    "nfsd",
    "selinuxfs",
    "fuse",
    "fuseblk",
    "virtiofs",
    "nfs",
    "nfs4",
    "ceph",
    "vfat",
    "exfat",
    "ntfs",
    "ntfs3",
    "iso9660",
    "squashfs",
    "erofs",
    "zfs",
    "bcachefs",
    "udf",
];

/// File systems whose calls wait on a server or a daemon, and so get lanes of their own
/// on the pool ([`crate::lanes`]): FUSE (sshfs, s3fs, gcsfuse...), NFS, SMB, 9p, Ceph,
/// the cluster file systems. Other non-local mounts (procfs, sysfs...) answer from
/// memory and stay on the pool's own threads.
const REMOTE: &[&str] = &[
    "fuse",
    "fuseblk",
    "virtiofs",
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "9p",
    "ceph",
    "glusterfs",
    "lustre",
    "gpfs",
    "afs",
    "orangefs",
    "gfs2",
    "ocfs2",
];

/// How the mount id of an fd is found ([`crate::sys::mount_id`] or its fdinfo form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    Statx,
    FdInfo,
}

/// What the fast paths need to know of the mounts: which ids are local, and how to
/// ask an fd for its mount id.
#[derive(Debug)]
pub struct Table {
    local: std::collections::HashSet<u64>,
    /// Mounts whose calls wait on a server or daemon (or an overlay over one), by id,
    /// with every mount's point for looking a path up by its prefix.
    remote: std::collections::HashSet<u64>,
    points: Vec<(Vec<u8>, u64)>,
    pub probe: Probe,
}

impl Table {
    pub fn is_local(&self, mount: u64) -> bool {
        self.local.contains(&mount)
    }

    pub fn is_remote(&self, mount: u64) -> bool {
        self.remote.contains(&mount)
    }

    /// Where mount `id` is mounted, if the table has it.
    pub fn mount_point(&self, id: u64) -> Option<&[u8]> {
        self.points.iter().rev().find(|(_, m)| *m == id).map(|(point, _)| point.as_slice())
    }

    /// Whether any mount is remote (else no path needs looking up).
    pub fn has_remote(&self) -> bool {
        !self.remote.is_empty()
    }

    /// The mount holding absolute `path` by its mount points alone (a symlink out of
    /// it is not followed): its id, if it is remote.
    pub fn remote_holder(&self, path: &[u8]) -> Option<u64> {
        longest_covering(path, &self.points, |(point, _)| point)
            .map(|(_, id)| *id)
            .filter(|id| self.remote.contains(id))
    }

    /// The table of `mountinfo`'s text.
    pub fn parse(mountinfo: &str) -> Table {
        let mounts: Vec<Mount> = mountinfo.lines().filter_map(Mount::parse).collect();
        let local = mounts.iter().filter(|m| is_local(m, &mounts, 0)).map(|m| m.id).collect();
        let remote = mounts.iter().filter(|m| is_remote(m, &mounts, 0)).map(|m| m.id).collect();
        let points = mounts.iter().map(|m| (m.mount_point.clone(), m.id)).collect();
        let statx_is_safe = mounts.iter().all(|m| STATX_ANSWERS_FROM_MEMORY.contains(&m.base_type()));
        Table { local, remote, points, probe: if statx_is_safe { Probe::Statx } else { Probe::FdInfo } }
    }
}

/// Whether `mount`'s calls may wait on a server or daemon: a remote type, or an overlay
/// with a layer on one.
fn is_remote(mount: &Mount, all: &[Mount], depth: usize) -> bool {
    if REMOTE.contains(&mount.base_type()) {
        return true;
    }
    if mount.fs_type != "overlay" || depth > 8 {
        return false;
    }
    mount.layers().iter().any(|layer| match holder(layer, all) {
        Some(holder) if holder.id != mount.id => is_remote(holder, all, depth + 1),
        _ => false,
    })
}

#[derive(Debug)]
struct Mount {
    id: u64,
    mount_point: Vec<u8>,
    fs_type: String,
    super_options: String,
}

impl Mount {
    fn parse(line: &str) -> Option<Mount> {
        let (left, right) = line.split_once(" - ")?;
        let mut left = left.split(' ');
        let id = left.next()?.parse().ok()?;
        let mount_point = unescape(left.nth(3)?);
        let mut right = right.split(' ');
        let fs_type = right.next()?.to_owned();
        let super_options = right.nth(1).unwrap_or("").to_owned();
        Some(Mount { id, mount_point, fs_type, super_options })
    }

    /// `fuse` for `fuse.sshfs`: the kernel driver, whose behaviour is what matters.
    fn base_type(&self) -> &str {
        self.fs_type.split('.').next().unwrap_or("")
    }

    /// An overlay's layers (lower, upper and data directories), as paths.
    fn layers(&self) -> Vec<Vec<u8>> {
        let mut layers = Vec::new();
        for option in self.super_options.split(',') {
            let Some((key, value)) = option.split_once('=') else { continue };
            match key {
                // lowerdir=a:b:c, where a ':' inside a name is written `\:`.
                "lowerdir" => layers.extend(split_unescaped(value, b':').into_iter().map(|v| unescape_bytes(&v))),
                "lowerdir+" | "datadir+" | "upperdir" => layers.push(unescape(value)),
                _ => {}
            }
        }
        layers
    }
}

/// Whether every call the fast paths make on `mount` stays local. An overlay is local
/// when all its layers are. A layer that resolves to the overlay itself lies in
/// another mount namespace: a container runtime
/// mounted it from the host's namespace (Docker, containerd and Podman keep layers
/// under /var/lib on the host's disk), so nothing here can see what holds it. Such an
/// overlay counts as local, and if its calls turn out slow the guard
/// ([`super::guard`]) turns the fast paths off for it.
fn is_local(mount: &Mount, all: &[Mount], depth: usize) -> bool {
    if LOCAL.contains(&mount.fs_type.as_str()) {
        return true;
    }
    if mount.fs_type != "overlay" || depth > 8 {
        return false;
    }
    let layers = mount.layers();
    !layers.is_empty()
        && layers.iter().all(|layer| match holder(layer, all) {
            None => false,
            Some(holder) if holder.id == mount.id => true,
            Some(holder) => is_local(holder, all, depth + 1),
        })
}

/// The mount that holds absolute `path`: the one with the longest mount point that is
/// a whole-component prefix of it, the last mounted where several share that point
/// (it hides the others). `None` for a relative path.
fn holder<'a>(path: &[u8], all: &'a [Mount]) -> Option<&'a Mount> {
    longest_covering(path, all, |m| &m.mount_point)
}

/// Of `entries` (in mount order), the one whose mount point (`point`) is the longest
/// whole-component prefix of absolute `path`, the last where several share it.
fn longest_covering<'a, T>(path: &[u8], entries: &'a [T], point: impl Fn(&T) -> &[u8]) -> Option<&'a T> {
    if path.first() != Some(&b'/') {
        return None;
    }
    let covers = |p: &[u8]| p == b"/" || (path.starts_with(p) && matches!(path.get(p.len()), None | Some(b'/')));
    let mut best: Option<&T> = None;
    for entry in entries.iter().filter(|e| covers(point(e))) {
        if best.map_or(true, |b| point(entry).len() >= point(b).len()) {
            best = Some(entry);
        }
    }
    best
}

/// Splits at `sep` where it is not escaped with a backslash (the escape stays).
fn split_unescaped(value: &str, sep: u8) -> Vec<Vec<u8>> {
    let mut parts = vec![Vec::new()];
    let mut bytes = value.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'\\' => {
                let last = parts.last_mut().expect("never empty");
                last.push(b);
                if let Some(next) = bytes.next() {
                    last.push(next);
                }
            }
            _ if b == sep => parts.push(Vec::new()),
            _ => parts.last_mut().expect("never empty").push(b),
        }
    }
    parts
}

fn unescape(field: &str) -> Vec<u8> {
    unescape_bytes(field.as_bytes())
}

/// mountinfo's escapes: `\ooo` (three octal digits) for a byte, `\x` for `x`.
fn unescape_bytes(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field.get(i + 1..i + 4).filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (field[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, c| n.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            (b'\\', None) if i + 1 < field.len() => {
                out.push(field[i + 1]);
                i += 2;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334492k,mode=755
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
40 27 0:40 / /mnt/slow rw,nosuid,nodev,relatime - fuse /dev/fuse rw,user_id=0,group_id=0
41 27 0:41 / /mnt/ssh rw,relatime - fuse.sshfs me@host: rw,user_id=0,group_id=0
42 27 0:42 / /srv/over rw,relatime - overlay overlay rw,lowerdir=/mnt/slow/lower,upperdir=/tmp/up,workdir=/tmp/work
43 27 0:43 / /srv/good rw,relatime - overlay overlay rw,lowerdir=/var/a:/var/b,upperdir=/tmp/up2,workdir=/tmp/w2
44 27 0:44 / /srv/new rw,relatime - overlay overlay rw,lowerdir+=/var/a,lowerdir+=/mnt/ssh/x,upperdir=/tmp/u3
45 27 0:45 / /mnt/with\\040space rw - tmpfs tmpfs rw
46 27 0:46 / /mnt/slowish rw - nfs4 server:/export rw,vers=4.2
47 27 254:0 /data /mnt/slow rw,relatime - ext4 /dev/vda rw
";

    #[test]
    fn local_file_systems_and_overlays_of_local_layers_are_local() {
        let t = Table::parse(HOST);
        for (id, local) in [
            (22, false), // proc: the fast paths have no business there
            (27, true),
            (40, false),
            (41, false),
            (43, true),
            (45, true),
            (46, false),
            (47, true),
        ] {
            assert_eq!(t.is_local(id), local, "mount {id}");
        }
        assert_eq!(t.probe, Probe::Statx, "FUSE and NFS honour AT_STATX_DONT_SYNC");
    }

    #[test]
    fn an_overlay_with_a_layer_on_fuse_is_not_local() {
        // 42's lower layer was on the FUSE mount 40, but 47 (ext4) was mounted over
        // /mnt/slow since: the layer paths are resolved as they stand now.
        let t = Table::parse(HOST);
        assert!(t.is_local(42), "the ext4 mount now hides the FUSE one at /mnt/slow");
        let without_47: String = HOST.lines().filter(|l| !l.starts_with("47 ")).map(|l| format!("{l}\n")).collect();
        let t = Table::parse(&without_47);
        assert!(!t.is_local(42), "a lower layer on FUSE");
        assert!(!t.is_local(44), "lowerdir+= on sshfs");
        assert!(t.is_local(43));
    }

    #[test]
    fn remote_mounts_and_overlays_over_them_get_lanes_and_paths_find_them_by_prefix() {
        let without_47: String = HOST.lines().filter(|l| !l.starts_with("47 ")).map(|l| format!("{l}\n")).collect();
        let t = Table::parse(&without_47);
        for (id, remote) in [(22, false), (27, false), (40, true), (41, true), (42, true), (43, false), (46, true)] {
            assert_eq!(t.is_remote(id), remote, "mount {id}");
        }
        assert!(t.has_remote());
        assert_eq!(t.remote_holder(b"/mnt/slowish/a/b"), Some(46));
        assert_eq!(t.remote_holder(b"/mnt/slowish"), Some(46));
        assert_eq!(t.remote_holder(b"/mnt/slowishx/a"), None, "a whole component, not a prefix of one");
        assert_eq!(t.remote_holder(b"/srv/x"), None);
        assert_eq!(t.remote_holder(b"relative"), None);
        assert!(!Table::parse("27 1 254:0 / / rw - ext4 /dev/vda rw\n").has_remote());
    }

    #[test]
    fn a_containers_root_overlay_whose_layers_are_in_the_hosts_namespace_counts_as_local() {
        let container = "\
600 500 0:60 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/AB:/var/lib/docker/overlay2/l/CD,upperdir=/var/lib/docker/overlay2/x/diff,workdir=/var/lib/docker/overlay2/x/work
601 600 0:61 / /proc rw - proc proc rw
602 600 254:1 /srv /data rw - xfs /dev/sdb rw
";
        let t = Table::parse(container);
        assert!(t.is_local(600));
        assert!(t.is_local(602));
    }

    #[test]
    fn a_mount_whose_getattr_always_asks_its_server_makes_the_probe_read_fdinfo() {
        let wsl = format!("{HOST}50 27 0:50 / /mnt/c rw,noatime - 9p drvfs rw,aname=drvfs\n");
        let t = Table::parse(&wsl);
        assert_eq!(t.probe, Probe::FdInfo);
        assert!(!t.is_local(50));
        let unknown = format!("{HOST}51 27 0:51 / /mnt/x rw - lustre 10.0.0.1@tcp:/fs rw\n");
        assert_eq!(Table::parse(&unknown).probe, Probe::FdInfo, "a type not known to answer from memory");
        for smb in ["cifs", "smb3"] {
            let share = format!("{HOST}52 27 0:52 / /mnt/share rw - {smb} //server/share rw,actimeo=0\n");
            assert_eq!(Table::parse(&share).probe, Probe::FdInfo, "{smb}: getattr asks the server after a setattr");
        }
    }

    #[test]
    fn escapes_and_odd_lines() {
        assert_eq!(unescape("/mnt/with\\040space\\134x"), b"/mnt/with space\\x");
        assert_eq!(split_unescaped("/a\\:b:/c", b':'), vec![b"/a\\:b".to_vec(), b"/c".to_vec()]);
        assert_eq!(unescape_bytes(b"/a\\:b"), b"/a:b");
        let t = Table::parse("garbage\n\n27 1 254:0 / / rw - ext4 /dev/vda rw\n");
        assert!(t.is_local(27));
        let t = Table::parse("70 27 0:70 / /o rw - overlay overlay rw,lowerdir=relative/path,upperdir=/u\n27 1 254:0 / / rw - ext4 /dev/vda rw\n");
        assert!(!t.is_local(70), "a layer we cannot place is not assumed local");
        assert!(!Table::parse("").is_local(27));
    }
}
