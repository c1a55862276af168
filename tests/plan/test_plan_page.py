"""The fleet plans in the report folder (`make report`)."""
from workbook.report.batch import write_index


def test_the_report_index_links_the_fleet_plans(tmp_path):
    """`make report` writes reports/plans/<portfolio>.html; the index lists them (and none when absent)."""
    assert "Fleet plans" not in write_index(tmp_path).read_text()
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "fleet-2027.html").write_text("<html></html>")
    page = write_index(tmp_path).read_text()
    assert "Fleet plans" in page and 'href="plans/fleet-2027.html">fleet-2027<' in page
