"""The upload bench's report: every figure of ours beside rclone's, with the ratio, medians of the runs."""

from platformctl.bench_upload import Run, rows, table


def test_each_measure_shows_rclones_figure_and_the_ratio_beside_ours_as_medians_of_the_runs():
    ours = [Run(9.0, 0.5, 0), Run(6.0, 0.2, 0), Run(60.0, 0.3, 0)]
    rclone = [Run(8.0, 1.0, 0), Run(7.5, 0.9, 0), Run(8.5, 0.8, 0)]
    lines = table(rows("seaweedfs, mix", ours, rclone), "rclone v1.75.2 copy --checksum").splitlines()
    assert lines[0] == "| measure | ours | rclone v1.75.2 copy --checksum | ratio (ours / rclone) |"
    assert lines[2:] == ["| seaweedfs, mix, first upload | 9.00 s | 8.00 s | 1.12x |",
                         "| seaweedfs, mix, unchanged re-run | 0.30 s | 0.90 s | 0.33x |"]
