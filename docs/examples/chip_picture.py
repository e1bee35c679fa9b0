"""The picture of the chip example in the README: a vertical cut through the
die's centre, coloured by material (above) and by temperature (below).

    pvpython docs/examples/chip_picture.py runs/chip/chip_00175352.vtkhdf chip.png

(without a display: under xvfb-run, or with pvbatch's offscreen rendering).
"""
import sys

from paraview import simple as pv


def cut_view(reader, array, preset, title, discrete):
    view = pv.CreateView("RenderView")
    view.ViewSize = [1200, 330]
    view.OrientationAxesVisibility = 0
    view.Background = [1, 1, 1]
    if hasattr(view, "UseColorPaletteForBackground"):
        view.UseColorPaletteForBackground = 0
    cut = pv.Slice(Input=reader)
    cut.SliceType = "Plane"
    cut.SliceType.Origin = [0.005, 0.005, 0.001]
    cut.SliceType.Normal = [0, 1, 0]
    shown = pv.Show(cut, view)
    pv.ColorBy(shown, ("POINTS", array))
    lut = pv.GetColorTransferFunction(array)
    lut.ApplyPreset(preset, True)
    if discrete:
        lut.InterpretValuesAsCategories = 1
        lut.Annotations = ["0", "mold", "1", "fr4", "2", "silicon", "3", "copper"]
    shown.SetScalarBarVisibility(view, True)
    bar = pv.GetScalarBar(lut, view)
    bar.Title = title
    bar.ComponentTitle = ""
    bar.TitleColor = [0, 0, 0]
    bar.LabelColor = [0, 0, 0]
    bar.WindowLocation = "Any Location"
    bar.Position = [0.9, 0.1]
    bar.ScalarBarLength = 0.8
    if not discrete:
        bar.RangeLabelFormat = "%-#.1f"
    view.CameraPosition = [0.005, -0.05, 0.001]
    view.CameraFocalPoint = [0.005, 0.005, 0.001]
    view.CameraViewUp = [0, 0, 1]
    view.CameraParallelProjection = 1
    pv.ResetCamera(view)
    # The whole 10 mm width, the bar to its right.
    view.CameraFocalPoint = [0.0056, 0.005, 0.001]
    view.CameraPosition = [0.0056, -0.05, 0.001]
    view.CameraParallelScale = 0.0016
    return view


def main():
    path, out = sys.argv[1], sys.argv[2]
    reader = pv.VTKHDFReader(FileName=[path])
    reader.UpdatePipeline()
    top = cut_view(reader, "material", "Brewer Qualitative Set2", "material", True)
    bottom = cut_view(reader, "temperature", "Inferno (matplotlib)", "T [C]", False)
    layout = pv.CreateLayout("chip")
    cell = layout.SplitVertical(0, 0.5)
    layout.AssignView(cell, top)
    layout.AssignView(cell + 1, bottom)
    pv.SaveScreenshot(out, layout, ImageResolution=[1200, 660])


if __name__ == "__main__":
    main()
