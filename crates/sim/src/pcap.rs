//! One pcap file per link (both directions, nanosecond timestamps, Ethernet link type), written
//! with the `pcap-file` crate. A frame is recorded when its first bit goes on the line; frames
//! are written as the nodes built them (without FCS and without padding to 60 bytes, as a
//! capture on a Linux interface shows them).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, TsResolution};
use rtlan_core::time::Instant;

/// The open pcap writers, one per link.
pub(crate) struct PcapSet {
    writers: Vec<PcapWriter<BufWriter<File>>>,
    /// Frames written per link.
    pub(crate) counts: Vec<u64>,
    /// File of each link.
    pub(crate) paths: Vec<PathBuf>,
    error: Option<std::io::Error>,
}

impl std::fmt::Debug for PcapSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapSet")
            .field("paths", &self.paths)
            .finish()
    }
}

fn io_error(e: pcap_file::PcapError) -> std::io::Error {
    match e {
        pcap_file::PcapError::IoError(e) => e,
        other => std::io::Error::other(other.to_string()),
    }
}

impl PcapSet {
    /// Creates `dir/<end a>-<end b>.pcap` for each link `(a, b)`.
    pub(crate) fn create(dir: &Path, links: &[(String, String)]) -> std::io::Result<PcapSet> {
        std::fs::create_dir_all(dir)?;
        let mut writers = Vec::with_capacity(links.len());
        let mut paths = Vec::with_capacity(links.len());
        for (a, b) in links {
            let path = dir.join(format!("{a}-{b}.pcap"));
            let file = BufWriter::new(File::create(&path)?);
            let header = PcapHeader {
                ts_resolution: TsResolution::NanoSecond,
                datalink: DataLink::ETHERNET,
                snaplen: 65_535,
                ..PcapHeader::default()
            };
            writers.push(PcapWriter::with_header(file, header).map_err(io_error)?);
            paths.push(path);
        }
        Ok(PcapSet {
            counts: vec![0; writers.len()],
            writers,
            paths,
            error: None,
        })
    }

    /// Records `frame` put on link `link` at `now`. The first write error is kept and reported
    /// by [`PcapSet::finish`].
    pub(crate) fn record(&mut self, link: u32, now: Instant, frame: &[u8]) {
        let Some(w) = self.writers.get_mut(link as usize) else {
            return;
        };
        let len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let packet = PcapPacket::new(Duration::from_nanos(now.as_nanos()), len, frame);
        match w.write_packet(&packet) {
            Ok(_) => self.counts[link as usize] += 1,
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(io_error(e));
                }
            }
        }
    }

    /// Flushes every file; returns the frames written per link.
    pub(crate) fn finish(self) -> std::io::Result<Vec<u64>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        for w in self.writers {
            let mut inner = w.into_writer();
            std::io::Write::flush(&mut inner)?;
        }
        Ok(self.counts)
    }
}
